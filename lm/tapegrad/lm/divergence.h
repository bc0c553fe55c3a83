// Divergence detection: a run has diverged when
//   (a) any quantity of the step is NaN or Inf — the loss, the gradient norm, or (instrumented)
//       any per-layer statistic; the culprit is the first non-finite quantity in the order the
//       forward and backward passes compute them (block 0's residual stream first, ..., logits,
//       loss, gradients), i.e. where the NaN appeared; or
//   (b) after warmup, the loss exceeds `factor` x the loss of the first step; the culprit is the
//       per-layer quantity that grew most relative to its first-step value (e.g. an attention
//       logit that went from 3 to 120) — the likely source.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tapegrad/lm/instrument.h"
#include "tapegrad/lm/trainer.h"

namespace tapegrad::lm {

struct Divergence {
  int64_t step = 0;
  std::string cause;     // "nan", "inf" or "loss_explosion"
  std::string quantity;  // "blocks.2.residual_rms", "loss", ...
  std::string detail;    // one readable sentence
};

class DivergenceDetector {
 public:
  DivergenceDetector(double factor, int64_t warmup) : factor_(factor), warmup_(warmup) {}
  std::optional<Divergence> check(const StepResult& r, const StepStats* stats);

  // The quantities of a step in forward/backward order, with their names.
  static std::vector<std::pair<std::string, double>> quantities(const StepResult& r, const StepStats* stats);

 private:
  double factor_;
  int64_t warmup_;
  double initial_loss_ = 0;
  std::vector<std::pair<std::string, double>> first_;
};

}  // namespace tapegrad::lm
