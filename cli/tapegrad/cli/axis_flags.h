// compare_norms' command line for the grid (grid.h): every train_lm setting that can be an axis
// is a flag taking a list of values ("--dim 64 128", "--qk-norm none rmsnorm", "--tie-head true
// false"), each value checked as train_lm checks it; the other settings keep train_lm's flags.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "tapegrad/lab/sweep.h"

namespace CLI {
class App;
}

namespace tapegrad::lab {

class AxisFlags {
 public:
  // Registers a flag for every setting that can be an axis (its default: o's values, so set the
  // lab's defaults first) and train_lm's flags for the rest, bound to o.base.
  AxisFlags(CLI::App& app, SweepOptions& o);
  // After parsing: writes the values given into o (set_axis: one value into o.base, several into
  // o.axes) and returns the flag names given on the command line.
  std::set<std::string> apply();

 private:
  CLI::App& app_;
  SweepOptions& o_;
  std::map<std::string, std::vector<std::string>> raw_;  // flag -> values as typed
};

}  // namespace tapegrad::lab
