// The training loop: train_lm, the lab and library code run a Trainer through lm::run, so when a
// run evaluates, measures its sharpness, checks for divergence, saves and stops is decided in one
// place, and what a program does with it (a metrics log, a lab curve, a progress bar) is a hook.
//
// Each step, in this order:
//   1. trainer.train_step(stop requested?)
//   2. the divergence check: the hooks' detector, or one that flags a non-finite quantity only
//   3. unless the step diverged: an evaluation when config.eval_every divides the step or it is
//      the last, and a sharpness measurement when config.sharpness_every divides it
//   4. hooks.on_step with all of the above (a diverged step is reported, then the run ends)
//   5. hooks.on_checkpoint when config.checkpoint_every divides the step (not the last)
//   6. the stops: hooks.stop_after reached, or a stop requested on any rank (Trainer::train_step
//      combines the request over the ranks, so all stop at the same step): on_checkpoint, then return.
// A run that reaches config.steps calls on_checkpoint once more and returns kFinished. A diverged
// run is not saved: the last checkpoint stays the last good one.
#pragma once

#include <functional>
#include <optional>

#include "tapegrad/lm/divergence.h"
#include "tapegrad/lm/sharpness.h"
#include "tapegrad/lm/trainer.h"

namespace tapegrad::lm {

// What one step did. `stats` is the step's instrumentation (config.instrument), else null.
struct StepReport {
  const StepResult& result;
  const StepStats* stats = nullptr;
  std::optional<EvalResult> eval{};
  std::optional<Sharpness> sharpness{};
  std::optional<Divergence> divergence{};
  double eval_ms = 0, sharpness_ms = 0;  // the time the evaluation and the sharpness took
};

struct RunHooks {
  std::function<void(const StepReport&)> on_step{};
  // Save the run (train_lm writes its checkpoint here); `step` is the last step taken.
  std::function<void(int64_t step)> on_checkpoint{};
  // Polled before each step (a signal arrived, another run failed): the run stops after it.
  std::function<bool()> stop_requested{};
  int64_t stop_after = 0;  // stop after this step as if interrupted (0: never); the schedule still spans config.steps
  // The divergence rules (the lab's loss-explosion and spike rules); null: non-finite quantities only.
  DivergenceDetector* detector = nullptr;
};

enum class RunEnd {
  kFinished,       // config.steps reached
  kDiverged,       // outcome.divergence says where and why
  kStoppedAfter,   // hooks.stop_after reached
  kStopRequested,  // hooks.stop_requested (on some rank)
};

struct RunOutcome {
  RunEnd end = RunEnd::kFinished;
  int64_t step = 0;  // the last step taken
  std::optional<Divergence> divergence{};
};

// Trains from trainer.step() to config.steps (or a stop), as described above.
RunOutcome run(Trainer& trainer, const RunHooks& hooks = {});

}  // namespace tapegrad::lm
