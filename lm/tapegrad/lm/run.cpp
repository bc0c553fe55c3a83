#include "tapegrad/lm/run.h"

#include <chrono>

namespace tapegrad::lm {

RunOutcome run(Trainer& trainer, const RunHooks& hooks) {
  const TrainConfig& c = trainer.config();
  // Non-finite quantities only: no loss factor can be exceeded (1e300), so a finite run never stops.
  DivergenceDetector non_finite(1e300, 0);
  DivergenceDetector& detector = hooks.detector ? *hooks.detector : non_finite;
  const auto checkpoint = [&](int64_t step) {
    if (hooks.on_checkpoint) hooks.on_checkpoint(step);
  };
  const int64_t first = trainer.step();
  int64_t step = first;
  while (trainer.step() < c.steps) {
    const bool request_stop = hooks.stop_requested && hooks.stop_requested();
    const StepResult r = trainer.train_step(request_stop);
    step = r.step;
    StepReport report{.result = r, .stats = trainer.last_stats()};
    report.divergence = detector.check(r, report.stats);
    const bool last = r.step == c.steps;
    const auto ms_since = [](std::chrono::steady_clock::time_point t) {
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
    };
    if (!report.divergence) {
      if (c.eval_every > 0 && (r.step % c.eval_every == 0 || last)) {
        const auto t0 = std::chrono::steady_clock::now();
        report.eval = trainer.evaluate();
        report.eval_ms = ms_since(t0);
      }
      if (c.sharpness_every > 0 && r.step % c.sharpness_every == 0) {
        const auto t0 = std::chrono::steady_clock::now();
        report.sharpness = measure_sharpness(trainer, r.lr, sharpness_options(c));
        report.sharpness_ms = ms_since(t0);
      }
    }
    if (hooks.on_step) hooks.on_step(report);
    if (report.divergence) return {RunEnd::kDiverged, step, std::move(report.divergence)};
    if (last) break;
    if (c.checkpoint_every > 0 && r.step % c.checkpoint_every == 0) checkpoint(step);
    if (hooks.stop_after > 0 && r.step >= hooks.stop_after) {
      checkpoint(step);
      return {RunEnd::kStoppedAfter, step};
    }
    if (r.stop) {
      checkpoint(step);
      return {RunEnd::kStopRequested, step};
    }
  }
  if (step > first) checkpoint(step);  // nothing new to save when the run had already finished
  return {RunEnd::kFinished, step};
}

}  // namespace tapegrad::lm
