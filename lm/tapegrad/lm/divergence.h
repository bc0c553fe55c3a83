// Divergence detection: a run has diverged when
//   (a) any quantity of the step is NaN or Inf — the loss, the gradient norm, or (instrumented)
//       any per-layer statistic; the culprit is the first non-finite quantity in the order the
//       forward and backward passes compute them (block 0's residual stream first, ..., logits,
//       loss, gradients), i.e. where the NaN appeared; or
//   (b) after warmup, the loss exceeds `factor` x the loss of the first step for `patience`
//       consecutive steps; the culprit is the per-layer quantity that grew most relative to its
//       first-step value (e.g. an attention logit that went from 3 to 120) — the likely source.
//       The divergence is dated to the first of those steps.
// Patience, default 10: a spike — the loss jumping and coming back within a few steps, as a
// LayerNorm run at lr 1e-2 did (3.44 -> 7.97 at step 10, then down) — is the stability signal the
// literature reports (Wortsman et al. 2023; Chowdhery et al. 2022), not a divergence; a loss that
// stays above 1.5x its starting value for 10 steps is not coming back at these sizes. Patience 1
// dates a divergence to the first step above the threshold.
//
// Spikes: after warmup, a step whose loss exceeds `spike_factor` (1.3) x the running mean of the
// loss (an EMA with weight 0.1, frozen while the spike lasts) starts a spike; it counts once the
// loss returns below 1.1 x that mean, i.e. when it recovered. A spike that never recovers is part
// of the divergence instead.
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

struct StabilityOptions {
  double factor = 1.5;       // loss above factor x its first value ...
  int64_t patience = 10;     // ... for this many consecutive steps after warmup: diverged
  double spike_factor = 1.3;  // a loss above spike_factor x its running mean starts a spike
};

class DivergenceDetector {
 public:
  DivergenceDetector(double factor, int64_t warmup) : DivergenceDetector(StabilityOptions{.factor = factor}, warmup) {}
  DivergenceDetector(StabilityOptions options, int64_t warmup) : o_(options), warmup_(warmup) {}
  std::optional<Divergence> check(const StepResult& r, const StepStats* stats);
  int64_t spikes() const { return spikes_; }  // recovered spikes so far

  // The quantities of a step in forward/backward order, with their names.
  static std::vector<std::pair<std::string, double>> quantities(const StepResult& r, const StepStats* stats);

 private:
  void track_spikes(const StepResult& r);

  StabilityOptions o_;
  int64_t warmup_;
  double initial_loss_ = 0;
  int64_t above_ = 0;          // consecutive steps above factor x initial
  int64_t first_above_ = 0;    // the first of them
  double ema_ = 0;             // running mean of the loss (frozen during a spike)
  bool in_spike_ = false;
  int64_t spikes_ = 0;
  std::vector<std::pair<std::string, double>> first_;
};

}  // namespace tapegrad::lm
