// Published recipes: each paper's own settings for its method, so that the lab tests a paper's
// claim on the paper's recipe before any verdict (docs/experiments.md, the reproductions table).
//
// A recipe is for one kind of run — its target, a setting and value ("norm" = "dyt") — and gives
// such a run its settings. `--recipe NAME` (train_lm, compare_norms) sets the target unless it is
// given, and the recipe's settings on every run of that target unless given (train_lm) or swept
// (compare_norms, where runs of other targets are left as they are: "DyT on its recipe against
// LayerNorm as usual").
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tapegrad/lm/train_config.h"

namespace tapegrad::lm {

struct Recipe {
  std::string name, help;
  std::string target_key, target_value;  // the runs it is for
  // The settings it gives such a run (keys of the settings table), for a model of width `dim`.
  std::function<nlohmann::json(int64_t dim)> settings;
  // Whether "papers" applies it: one recipe per target (a paper's literal values and their
  // transfer to small width are two recipes for one target; "papers" takes the transfer).
  bool in_papers = true;
};

// The recipe setting's value that puts every run on its own paper's recipe: `--recipe papers
// --placement pre post peri deepnorm` runs peri on peri-ln-paper, deepnorm on deepnorm-paper and
// the others as given (dyt runs on dyt-paper-transfer). Two recipes that apply to one run and set
// one setting are refused by name
// (deepnorm-paper and dyt-paper both scale the embeddings: a DyT run with DeepNorm placement).
inline constexpr const char* kEveryPaper = "papers";

// Every recipe; "none" and "papers" are not ones (they are values of the setting).
const std::vector<Recipe>& recipes();
const Recipe* find_recipe(const std::string& name);  // nullptr for "none", "papers" or an unknown name
// The recipes a value of the setting stands for: none for "none", every one for "papers".
std::vector<const Recipe*> recipes_in(const std::string& setting);
std::vector<std::string> recipe_names();             // "none", "papers", then every recipe
std::string recipe_help();                           // one line per recipe, for --help

// Whether `c` is a run `r` is for.
bool recipe_targets(const Recipe& r, const TrainConfig& c);
// Applies c.recipe to c: its target, when `given` (flag names without dashes) does not name the
// target's key; then, on a run of that target, each of its settings not named in `keep`. A target
// given otherwise is a UsageError naming both ("--recipe dyt-paper is for --norm dyt, got
// layernorm"), unless `other_targets_allowed` (a sweep, whose other runs keep their settings).
// "papers" sets no target: each run takes the settings of the recipe aimed at it, if any.
void apply_recipe(TrainConfig& c, const std::set<std::string>& given, const std::set<std::string>& keep,
                  bool other_targets_allowed = false);

// The one way a config is made from settings a user gave (train_lm's flags, Python's TrainConfig
// keywords): c's recipe applied (flags given win over it), then validate(). `given`: the keys the
// user set (flag names without dashes).
TrainConfig configure(TrainConfig c, const std::set<std::string>& given);

// Zhu et al. 2025's initial alpha of the DyT before attention and of the others (the FFN input's,
// the final one), by model width: their official LLaMA code's default below width 4096, and the
// values its README gives for LLaMA 2 7B (4096), 13B (5120) and 34B/70B (8192).
std::pair<double, double> dyt_paper_alpha(int64_t dim);

}  // namespace tapegrad::lm
