// Learning-rate schedule: linear warmup from 0, then cosine decay to a floor.
//   step < warmup:  lr * (step + 1) / warmup
//   afterwards:     min_lr + (lr - min_lr) * 0.5 (1 + cos(pi * progress)),
//                   progress = (step - warmup) / (total - warmup), clamped to [0, 1]
// `step` counts from 0; the first step already has a non-zero rate (as in nanoGPT).
#pragma once

#include <cstdint>

namespace tapegrad {

struct CosineSchedule {
  double lr = 1e-3;
  double min_lr = 1e-4;
  int64_t warmup = 100;
  int64_t total = 2000;

  double at(int64_t step) const;
};

}  // namespace tapegrad
