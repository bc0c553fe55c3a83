#include "tapegrad/lab/train_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "tapegrad/lab/grid.h"
#include "tapegrad/lm/divergence.h"
#include "tapegrad/lm/run.h"
#include "tapegrad/lm/sharpness.h"

namespace tapegrad::lab {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

std::optional<RunRecord> run_one(const SweepOptions& o, const RunSpec& spec,
                                 std::shared_ptr<const text::Tokenizer> tokenizer,
                                 std::shared_ptr<const lm::TokenData> data, int threads, std::string& curve,
                                 const std::function<bool()>& stop, RunTiming* timing) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto seconds_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  RunTiming time;
  const lm::TrainConfig c = run_config(o, spec, threads);
  lm::Trainer trainer(c, std::move(tokenizer), std::move(data));
  time.setup_s = seconds_since(t0);
  lm::DivergenceDetector detector(
      {.factor = o.divergence_factor, .patience = o.divergence_patience, .spike_factor = o.spike_factor}, c.warmup);

  RunRecord rec;
  rec.spec = spec;
  rec.steps = c.steps;
  rec.final_train_loss = rec.final_val_loss = kNaN;
  rec.min_train_loss = rec.min_val_loss = std::numeric_limits<double>::infinity();
  double ms = 0;
  const std::string prefix = identity_cells(spec);
  lm::RunHooks hooks;
  hooks.detector = &detector;
  hooks.stop_requested = stop;
  hooks.on_step = [&](const lm::StepReport& report) {
    const auto h0 = std::chrono::steady_clock::now();
    const lm::StepResult& r = report.result;
    time.steps_s += r.step_ms / 1e3, time.instrument_s += r.instrument_ms / 1e3;
    time.eval_s += report.eval_ms / 1e3, time.sharpness_s += report.sharpness_ms / 1e3;
    if (r.step == 1) rec.initial_loss = r.loss;
    else ms += r.step_ms;
    rec.steps_done = r.step;
    fold_step(rec, report);  // the run's summaries of the curve (records.h)
    if (const auto& e = report.eval) {
      rec.final_val_loss = e->val_loss, rec.final_train_loss = e->train_loss;
      rec.min_val_loss = std::min(rec.min_val_loss, e->val_loss);
      rec.min_train_loss = std::min(rec.min_train_loss, e->train_loss);
    }
    if (const auto& h = report.sharpness) {
      const double ratio = lm::edge_ratio(*h);
      if (std::isnan(rec.peak_sharpness_ratio) || ratio > rec.peak_sharpness_ratio) rec.peak_sharpness_ratio = ratio;
      if (ratio >= 1 && rec.sharpness_cross_step == 0) rec.sharpness_cross_step = r.step;
      const double batch_ratio = h->batch_sharpness / h->threshold;
      if (std::isfinite(batch_ratio) && !(batch_ratio <= rec.peak_batch_sharpness_ratio)) rec.peak_batch_sharpness_ratio = batch_ratio;
    }
    curve += prefix + "," + curve_row(report, c.sharpness_every > 0) + "\n";
    time.record_s += seconds_since(h0);
  };
  const lm::RunOutcome outcome = lm::run(trainer, hooks);
  if (outcome.end == lm::RunEnd::kStopRequested) return std::nullopt;
  if (const auto& d = outcome.divergence) {
    rec.diverged = true;
    rec.divergence_step = d->step;
    rec.divergence_cause = d->cause;
    rec.divergence_quantity = d->quantity;
    rec.final_val_loss = rec.final_train_loss = kNaN;
  }
  rec.spikes = detector.spikes();
  if (!std::isfinite(rec.min_val_loss)) rec.min_val_loss = kNaN;
  if (!std::isfinite(rec.min_train_loss)) rec.min_train_loss = kNaN;
  rec.step_ms = rec.steps_done > 1 ? ms / static_cast<double>(rec.steps_done - 1) : kNaN;
  rec.tokens_per_s = static_cast<double>(c.batch * c.model.ctx) / (rec.step_ms / 1000.0);
  rec.wall_s = seconds_since(t0);
  if (timing) *timing = time;
  return rec;
}

}  // namespace tapegrad::lab
