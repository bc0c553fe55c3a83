// What a sweep is asked to do: its axes and base settings, the lab's rules and scheduling
// (SweepOptions), and the lab's defaults. The grid (grid.h) and the sweep (sweep.h) both read it.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tapegrad/lm/train_config.h"

namespace tapegrad::lab {

// A setting the sweep varies, with its values (canonical, grid.h; two or more).
struct Axis {
  std::string key;
  std::vector<nlohmann::json> values;
  bool operator==(const Axis&) const = default;
};
std::vector<Axis> every_norm_axis();  // {"norm": every registered norm}: SweepOptions' default

struct SweepOptions {
  // Every setting's value where no axis gives several (base.instrument is forced on); the lab
  // numbers its seeds from 1.
  lm::TrainConfig base = [] {
    lm::TrainConfig c;
    c.seed = 1;
    return c;
  }();
  // Training settings the user named (flags, Python keywords), whatever their value: a recipe
  // never overrides them, as train_lm's flags given win over its recipe (a value equal to the
  // default included: `--recipe dyt-paper-transfer --tie-head true`). The front end that parses
  // the user's words fills it (name_given); stored in sweep.json ("given").
  std::set<std::string> given;
  // The axes in the sweep's order (grid.h: set them with set_axis). Default: every registered norm.
  std::vector<Axis> axes = every_norm_axis();
  double min_lr_ratio = 0.1;     // each run decays to lr * ratio
  double divergence_factor = 1.5;
  int64_t divergence_patience = 10;  // steps above the factor before a run counts as diverged (divergence.h)
  double spike_factor = 1.3;         // a loss above this x its running mean starts a spike
  int64_t evals = 4;             // evaluations per run, evenly spaced (the last at the final step)
  int jobs = 1;                  // runs at once; each gets max(1, cores / jobs) threads
  std::string out;               // the sweep's folder
  bool plots = true;             // draw the plots (the front end's LabHooks::draw_plots)
  std::string python;            // the plots' interpreter ("": the first that imports matplotlib)
};
// Records in o.given the training settings among `named` (flag names: the sweep's own and other
// words are skipped), so that a recipe leaves them alone.
void name_given(SweepOptions& o, const std::set<std::string>& named);

// The lab's defaults, compare_norms' and tapegrad.lab's: short runs of an L4 H4 C64 T64 model at
// batch 8, five learning rates from 1e-3 (every norm trains) to 1e-1 (where the normalised models
// give out too), two seeds, every registered norm, each on its authors' recipe (DyT on its
// paper's, carried to this width: dyt-paper-transfer, lm/recipes.h) — ~1.5 min on 2 cores. Runs at once: the cores over `local_ranks`
// processes sharing the machine.
SweepOptions default_sweep(int local_ranks = 1);

}  // namespace tapegrad::lab
