#include "tapegrad/optim/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace tapegrad {

double CosineSchedule::at(int64_t step) const {
  if (step < warmup) return lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
  if (total <= warmup) return min_lr;
  const double progress =
      std::clamp(static_cast<double>(step - warmup) / static_cast<double>(total - warmup), 0.0, 1.0);
  return min_lr + (lr - min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
}

}  // namespace tapegrad
