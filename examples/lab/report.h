// The lab's report: aggregates over seeds for every (placement, depth, warmup, norm) group,
// the LR-sensitivity measure of Wortsman et al. 2023, and report.md with a plain-language
// reading generated from the numbers.
#pragma once

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "sweep.h"

namespace tapegrad::lab {

struct LrCell {
  double lr = 0;
  int runs = 0, diverged = 0;
  double mean = 0, std = 0;  // final validation loss over the seeds that did not diverge (NaN if none)
  double capped = 0;         // mean over all seeds of min(final val loss, initial loss); diverged = initial
};

// "Stable" must mean trained: a run that stalls near its initial loss (post-norm without warmup
// at 3.44 against an initial 3.50) has not diverged, but it has not trained either. A learning
// rate counts as stable when its runs end well below the unigram loss — under this fraction of
// the validation loss of the token frequencies alone (lm::unigram_loss: what a model that ignores
// context reaches) — or, when that is not known, under this fraction of the initial loss.
inline constexpr double kTrainedFraction = 0.9;

struct Group {
  std::string norm, placement;
  int64_t depth = 0, warmup = 0;
  std::string label() const;  // "rmsnorm/pre" (+ " L8", " w0" when those axes vary)
  std::vector<LrCell> cells;  // ascending lr
  double initial_loss = 0;    // mean loss at step 1
  double best_loss = 0, best_lr = 0;  // lowest mean final val loss among LRs where no seed diverged
  double largest_stable_lr = 0;       // largest LR that trained: no seed diverged and the mean final val
                                      // loss is below kTrainedFraction x the initial loss (0 if none)
  double lr_sensitivity = 0;
  bool trained = true;                // its best loss is below the trained threshold (see above); if not,
                                      // its LR sensitivity is meaningless (flat because nothing learned)
  double trained_below = 0;           // that threshold
  int runs = 0, diverged = 0;
  int64_t spikes = 0;                 // recovered loss spikes, summed over the group's runs
  double step_ms = 0;                 // mean over runs
  double ref_peak_residual_rms = 0, ref_peak_max_logit = 0, ref_final_residual_rms = 0;  // at the reference LR
};

// LR sensitivity (Wortsman et al. 2023, "Small-scale proxies for large-scale Transformer
// training instabilities"): E over the LR grid of [min(loss(lr), initial loss) - min over the
// grid of loss], with loss(lr) the final loss (a diverged run counts as the initial loss).
// `capped` holds min(loss(lr), initial loss) per grid point.
double lr_sensitivity(const std::vector<double>& capped);

struct Summary {
  std::vector<Group> groups;
  double reference_lr = 0;  // where curves and scale drift are compared (see summarize)
  bool varied_depth = false, varied_warmup = false;
  int jobs = 1;  // runs trained at once (timings are noisier above 1)
};

// The reference LR is the largest LR at which every group of the sweep trained without
// divergence (the most demanding common setting), or the smallest LR if there is none.
// unigram: the sweep's unigram loss (the trained threshold), NaN to use kTrainedFraction x initial.
Summary summarize(const std::vector<RunRecord>& runs, double unigram = std::numeric_limits<double>::quiet_NaN());

struct ReportContext {
  std::string command;  // how to reproduce
  std::string data;     // what it trained on
  std::string model;    // e.g. "C128 H4 T64 B12, 300 steps"
  double wall_s = 0;
  std::vector<std::pair<std::string, std::string>> plots;  // file, caption
};

std::string reading(const Summary& s);  // the plain-language paragraph, as bullet lines
std::string report_markdown(const Summary& s, const std::vector<RunRecord>& runs, const ReportContext& ctx);
std::string console_summary(const Summary& s);

}  // namespace tapegrad::lab
