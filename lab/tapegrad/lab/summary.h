// The lab's judgements over a sweep's runs: aggregates over seeds for every group (a point of the
// grid without its lr and seed: norm x placement x layers x warmup x any other axis), which runs are
// clean, the LR-sensitivity measure of Wortsman et al. 2023, and the rules for "lower" and "faster".
// report.h writes them as text.
#pragma once

#include <limits>
#include <map>
#include <string>
#include <vector>

#include "tapegrad/lab/records.h"

namespace tapegrad::lab {

// A run that did not diverge can still be unclean (Wortsman et al. 2023, "Small-scale proxies"):
//   collapsed            it trained (its best val loss went below the trained threshold) and ended
//                        back above it, or it ended more than kCollapseMargin above its own best;
//   flagged              a run column's judgement (RunColumn::flag, records.h: flagged()) — tapegrad's
//                        own: its largest attention logit passed kAttentionLogitLimit, the growth
//                        that precedes their attention-logit divergence (qk-layernorm prevents it);
//                        its mean log Z (the LM head's logsumexp) fell below kLogZFloor, the drift
//                        very negative that precedes their output-logit divergence (the z-loss
//                        prevents it; at initialisation log Z is about ln(vocabulary): 4.2 for 65
//                        characters; clean runs here stay between 3.5 and 8) — and any a program
//                        registers (register_run_column).
// None of them counts towards "the largest lr that trained".
inline constexpr double kCollapseMargin = 0.1;          // nats of validation loss
bool collapsed(const RunRecord& r, double trained_below);

// How many runs each judging column flagged (records.h: judging_columns()), by column name.
struct FlagCounts {
  std::map<std::string, int> by_column;
  int operator[](const std::string& column) const {
    const auto it = by_column.find(column);
    return it == by_column.end() ? 0 : it->second;
  }
  int total() const;
  void add(const FlagCounts& o);
};
// The judging columns' flags on a run.
FlagCounts flags_of(const RunRecord& r);

struct LrCell {
  double lr = 0;
  int runs = 0, diverged = 0;
  int collapsed = 0;  // of the runs that did not diverge
  FlagCounts flagged;  // of the runs that did not diverge
  double mean = 0, std = 0;  // final validation loss over the seeds that did not diverge (NaN if none)
  double capped = 0;         // mean over all seeds of min(final val loss, initial loss); diverged = initial
  // Medians over the seeds (diverged runs up to their divergence) of each run's peak:
  double peak_residual_rms = 0, peak_attention_logit = 0, peak_output_logit = 0;
  double min_log_z_mean = 0;  // median over the seeds of each run's lowest mean log Z
};

// "Stable" must mean trained: a run that stalls near its initial loss (post-norm without warmup
// at 3.44 against an initial 3.50) has not diverged, but it has not trained either. A learning
// rate counts as stable when its runs end well below the unigram loss — under this fraction of
// the validation loss of the token frequencies alone (lm::unigram_loss: what a model that ignores
// context reaches) — or, when that is not known, under this fraction of the initial loss.
inline constexpr double kTrainedFraction = 0.9;

struct Group {
  // What the group's runs share: every value of their specs (run_spec.h) but lr and seed, as text
  // ("norm" -> "rmsnorm", "layers" -> "8", "dim" -> "64").
  std::map<std::string, std::string> values;
  // The group's value of axis `key` (a flag name: "norm", "layers", "dim", ...); for another
  // setting it holds at the base, `base` (Summary::base) names the value.
  std::string value(const std::string& key, const std::map<std::string, std::string>& base = {}) const;
  std::string label;          // "rmsnorm/pre" (+ " L8", " w0", " dim=64" for the axes that vary)
  std::vector<LrCell> cells;  // ascending lr
  double initial_loss = 0;    // mean loss at step 1
  double best_loss = 0, best_lr = 0;  // lowest mean final val loss among LRs where no seed diverged
  double best_std = 0;                // ... its standard deviation over the seeds (NaN for one seed)
  int best_n = 0;                     // ... and how many seeds it is the mean of
  double largest_stable_lr = 0;       // largest LR that trained: no seed diverged, collapsed or was
                                      // flagged, and the mean final val loss is below the trained
                                      // threshold (0 if none)
  double lr_sensitivity = 0;
  bool trained = true;                // its best loss is below the trained threshold (see above); if not,
                                      // its LR sensitivity is meaningless (flat because nothing learned)
  double trained_below = 0;           // that threshold
  int runs = 0, diverged = 0;
  int collapsed = 0;                  // unclean runs that did not diverge (see LrCell)
  FlagCounts flagged;
  int64_t spikes = 0;                 // recovered loss spikes, summed over the group's runs
  double step_ms = 0;                 // mean over runs
  std::map<std::pair<double, uint64_t>, double> run_step_ms;  // (lr, seed) -> step_ms, runs that did not diverge
  std::map<std::pair<double, uint64_t>, double> run_val_loss;  // (lr, seed) -> final val loss, runs that did not diverge
  double ref_peak_residual_rms = 0, ref_peak_attention_logit = 0, ref_final_residual_rms = 0;  // at the reference LR
  double ref_peak_output_logit = 0;   // largest LM-head logit, median over seeds at the reference LR
  double min_log_z_mean = 0;          // the lowest mean log Z of any of its runs (NaN: not recorded)
};

// Whether one configuration's steps are faster than another's, from paired runs (same lr and
// seed, trained side by side): the ratio of their step times, its spread over the pairs, and a
// verdict only when the spread allows one.
struct SpeedComparison {
  int pairs = 0;
  double ratio = 0;             // geometric mean of step_ms(a) / step_ms(b) over the pairs
  double low = 0, high = 0;     // its ~95 % interval: exp(mean log ratio -/+ 2 sd / sqrt(pairs))
  bool measurable = false;      // >= 3 pairs and the interval excludes 1
};
SpeedComparison compare_speed(const Group& a, const Group& b);

// Whether one configuration's loss is lower than another's — the lab's rule for "lower" and
// "higher": a difference counts only when it exceeds twice its standard error. Best against best:
// d = best(a) - best(b), se = sqrt(sa^2/na + sb^2/nb) over the seeds at each best lr. At the same
// learning rate (b's best), paired over the seeds both ran (a seed is the same initialisation and
// batches for every configuration): d = mean of the per-seed differences, se = their std / sqrt(n).
// With fewer than two seeds there is no spread, and no verdict.
struct LossComparison {
  double difference = std::numeric_limits<double>::quiet_NaN(), se = std::numeric_limits<double>::quiet_NaN();
  bool beyond_spread = false;
  double matched_lr = std::numeric_limits<double>::quiet_NaN();
  double matched_difference = std::numeric_limits<double>::quiet_NaN(), matched_se = std::numeric_limits<double>::quiet_NaN();
  int pairs = 0;
  bool matched_beyond_spread = false;
};
LossComparison compare_losses(const Group& a, const Group& b);

// LR sensitivity (Wortsman et al. 2023, "Small-scale proxies for large-scale Transformer
// training instabilities"): E over the LR grid of [min(loss(lr), initial loss) - min over the
// grid of loss], with loss(lr) the final loss (a diverged run counts as the initial loss).
// `capped` holds min(loss(lr), initial loss) per grid point.
double lr_sensitivity(const std::vector<double>& capped);

struct Summary {
  std::vector<Group> groups;
  std::vector<double> lrs;  // the lr grid every LR-sensitivity figure is over (ascending)
  double reference_lr = 0;  // where curves and scale drift are compared (see summarize)
  std::vector<std::string> varied;          // axes other than lr and seed with several values, label order
  std::map<std::string, std::string> base;  // the base value of every other axis (Group::value)
  bool varies(const std::string& key) const;
  int jobs = 1;  // runs trained at once (timings are noisier above 1)
};

// The reference LR is the largest LR at which every group of the sweep trained without
// divergence (the most demanding common setting), or the smallest LR if there is none.
// unigram: the sweep's unigram loss (the trained threshold), NaN to use kTrainedFraction x initial.
// base: the base value of each axis beyond the core six (for labels; "base" where missing).
Summary summarize(const std::vector<RunRecord>& runs, double unigram = std::numeric_limits<double>::quiet_NaN(),
                  const std::map<std::string, std::string>& base = {});

// A run's group: its values of every setting but lr and seed, as text.
std::map<std::string, std::string> group_values(const RunSpec& spec);

}  // namespace tapegrad::lab
