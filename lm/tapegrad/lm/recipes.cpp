#include "tapegrad/lm/recipes.h"

#include "tapegrad/error.h"
#include "tapegrad/lm/settings.h"
#include "tapegrad/lm/usage_error.h"

namespace tapegrad::lm {

std::pair<double, double> dyt_paper_alpha(int64_t dim) {
  if (dim >= 8192) return {0.2, 0.05};
  if (dim >= 5120) return {0.6, 0.15};
  if (dim >= 4096) return {0.8, 0.2};
  return {1.0, 1.0};
}

// DyT's language-model recipe twice. dyt-paper is its literal values: the formulas of the official
// LLaMA code evaluated at this width (s0 = sqrt(dim) on the token embedding, alpha0 by width).
// dyt-paper-transfer keeps what those formulas do at the paper's width instead: there the first
// DyT sees token embeddings of std 0.02 * sqrt(4096) = 1.28 times alpha0 0.8, a tanh input of ~1
// (its knee); at width 64 the same formula gives 0.16 and every DyT starts nearly linear, so the
// transfer sets s0 = 1 / (alpha0 * 0.02) (embed-scale-rule unit-input). It scales what enters the
// first block (LLaMA has no position table: here positions are added, 1/8 of the signal at init
// if left unscaled), unties the LM head (LLaMA 2's is its own) and takes the official run's AdamW
// beta2 0.95 and weight decay 0.1 (the official code decays every parameter; here matrices only).
// Its alpha0 is one value for every DyT (dyt-alpha-attn 0), 1.0 below width 4096 as the code's
// default: an axis of --dyt-alpha moves them together, as the paper's section 7 tunes alpha0.
const std::vector<Recipe>& recipes() {
  static const std::vector<Recipe> list = {
      {.name = "dyt-paper",
       .help = "DyT as Zhu et al. 2025 train language models, their values literally (LLaMA appendix and official "
               "code): a learned scalar after the token embedding, initialised to sqrt(dim); the DyT before "
               "attention and the others with their own alpha0, by width (1.0 and 1.0 below 4096); no beta",
       .target_key = "norm",
       .target_value = "dyt",
       .settings =
           [](int64_t dim) {
             const auto [attn, other] = dyt_paper_alpha(dim);
             return nlohmann::json{{"embed-scale", "learned"}, {"embed-scale-init", 0.0}, {"dyt-alpha-attn", attn},
                                   {"dyt-alpha", other},       {"dyt-beta", false}};
           },
       .in_papers = false},
      {.name = "dyt-paper-transfer",
       .help = "DyT's recipe carried to small width by what it does at the paper's width 4096: the learned scale "
               "on token + position initialised so that the first DyT's input has magnitude 1 (1 / (alpha0 x "
               "0.02)), alpha0 1.0 for every DyT (below width 4096), no beta, an untied LM head, AdamW beta2 0.95 "
               "and weight decay 0.1 as the official run",
       .target_key = "norm",
       .target_value = "dyt",
       .settings =
           [](int64_t) {
             return nlohmann::json{{"embed-scale", "learned"}, {"embed-scale-init", 0.0},
                                   {"embed-scale-positions", true}, {"embed-scale-rule", "unit-input"},
                                   {"dyt-alpha-attn", 0.0},          {"dyt-alpha", 1.0},
                                   {"dyt-beta", false},              {"tie-head", false},
                                   {"beta2", 0.95},                  {"weight-decay", 0.1}};
           }},
      {.name = "peri-ln-paper",
       .help = "Peri-LN as Kim et al. 2025 describe it: besides the norms around every sub-layer, a norm on the "
               "embeddings",
       .target_key = "placement",
       .target_value = "peri",
       .settings = [](int64_t) { return nlohmann::json{{"embed-norm", true}}; }},
      {.name = "deepnorm-paper",
       .help = "DeepNet (Wang et al. 2022) as its reference decoder (torchscale) runs it: token embeddings times "
               "sqrt(dim), and no norm after the post-norm stack",
       .target_key = "placement",
       .target_value = "deepnorm",
       .settings =
           [](int64_t) {
             return nlohmann::json{{"embed-scale", "fixed"}, {"embed-scale-init", 0.0}, {"final-norm", false}};
           }},
  };
  return list;
}

const Recipe* find_recipe(const std::string& name) {
  for (const Recipe& r : recipes())
    if (r.name == name) return &r;
  return nullptr;
}

std::vector<const Recipe*> recipes_in(const std::string& setting) {
  std::vector<const Recipe*> in;
  for (const Recipe& r : recipes())
    if ((setting == kEveryPaper && r.in_papers) || setting == r.name) in.push_back(&r);
  return in;
}

std::vector<std::string> recipe_names() {
  std::vector<std::string> names{"none", kEveryPaper};
  for (const Recipe& r : recipes()) names.push_back(r.name);
  return names;
}

std::string recipe_help() {
  std::string h = cat("none: the settings as given\n", kEveryPaper,
                      ": every run on its own paper's recipe, where one below is for it (the others as given)");
  for (const Recipe& r : recipes()) h += cat("\n", r.name, " (for --", r.target_key, " ", r.target_value, "): ", r.help);
  return h;
}

namespace {

void apply_settings(const Recipe& r, TrainConfig& c, const std::set<std::string>& keep) {
  const nlohmann::json settings = r.settings(c.model.dim);
  for (const auto& [key, value] : settings.items())
    if (!keep.count(key)) set_setting(*find_setting(key), c, value);
}

}  // namespace

bool recipe_targets(const Recipe& r, const TrainConfig& c) {
  return setting_json(*find_setting(r.target_key), c) == r.target_value;
}

void apply_recipe(TrainConfig& c, const std::set<std::string>& given, const std::set<std::string>& keep,
                  bool other_targets_allowed) {
  if (c.recipe == "none") return;
  if (c.recipe == kEveryPaper) {
    // Targets are left as they are: each run takes the recipes aimed at it, which may not both set
    // one setting (which paper's value it gets would be an accident of order).
    std::vector<const Recipe*> applying;
    for (const Recipe* r : recipes_in(c.recipe))
      if (recipe_targets(*r, c)) applying.push_back(r);
    for (size_t i = 0; i < applying.size(); ++i)
      for (size_t j = i + 1; j < applying.size(); ++j) {
        const nlohmann::json a = applying[i]->settings(c.model.dim), b = applying[j]->settings(c.model.dim);
        for (const auto& [key, value] : a.items())
          if (b.contains(key) && !keep.count(key))
            throw SettingError(cat("{recipe} ", kEveryPaper, ": ", applying[i]->name, " (for {", applying[i]->target_key,
                                   "} ", applying[i]->target_value, ") and ", applying[j]->name, " (for {",
                                   applying[j]->target_key, "} ", applying[j]->target_value, ") both set {", key,
                                   "} on this run; give {", key, "} a value of its own, or one recipe"));
      }
    for (const Recipe* r : applying) apply_settings(*r, c, keep);
    return;
  }
  const Recipe* r = find_recipe(c.recipe);
  if (r == nullptr) {
    std::string names;
    for (const std::string& n : recipe_names()) names += (names.empty() ? "" : ", ") + n;
    throw SettingError(cat("{recipe} must be one of ", names, ", got '", c.recipe.substr(0, 64), "'"));
  }
  const Setting& target = *find_setting(r->target_key);
  if (!given.count(r->target_key)) set_setting(target, c, r->target_value);
  if (!recipe_targets(*r, c)) {
    if (other_targets_allowed) return;
    throw SettingError(cat("{recipe} ", r->name, " is for {", r->target_key, "} ", r->target_value, ", got ",
                         setting_json(target, c).get<std::string>()));
  }
  apply_settings(*r, c, keep);
}

TrainConfig configure(TrainConfig c, const std::set<std::string>& given) {
  apply_recipe(c, given, given);
  c.validate();
  return c;
}

}  // namespace tapegrad::lm
