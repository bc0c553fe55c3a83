#include "axis_flags.h"

#include <CLI/CLI.hpp>
#include <algorithm>

#include "cli.h"
#include "tapegrad/lab/grid.h"
#include "tapegrad/lm/settings.h"
#include "tapegrad/lm/usage_error.h"
#include "train_flags.h"

namespace tapegrad::lab {

namespace {

// The settings compare_norms sets itself for each run (lm::SweepRole::kLab), not flags of the sweep.
std::set<std::string> not_flags() {
  std::set<std::string> keys;
  for (const lm::Setting& s : lm::settings())
    if (s.sweep == lm::SweepRole::kLab) keys.insert(s.key);
  return keys;
}

// `text` as train_lm reads it for flag `key` (its checks and conversions), in setting_text's form.
std::string canonical(const lm::TrainConfig& base, const std::string& key, const std::string& text, bool boolean) {
  lm::TrainConfig c = base;
  CLI::App one;
  cli::add_train_flags(one, c);
  cli::require_decimal_integers(one);
  std::vector<std::string> args = boolean ? std::vector<std::string>{"--" + key + "=" + text}
                                          : std::vector<std::string>{"--" + key, text};
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  try {
    one.parse(args);
  } catch (const CLI::ParseError& e) {
    const std::string what = e.what();  // CLI11's messages mostly name the flag already
    throw lm::UsageError(what.rfind("--" + key, 0) == 0 ? what : cat("--", key, ": ", what));
  }
  const std::string t = setting_text(lm::to_json(c)[key]);
  try {
    setting_value(key, t);  // a swept value becomes part of run ids (file names)
  } catch (const lm::SettingError&) {
    throw;
  } catch (const Error& e) {
    throw lm::UsageError(e.what());
  }
  return t;
}

}  // namespace

AxisFlags::AxisFlags(CLI::App& app, SweepOptions& o) : app_(app), o_(o) {
  std::set<std::string> skip = not_flags();
  skip.insert(kCoreAxes.begin(), kCoreAxes.end());
  skip.insert(extra_axis_keys().begin(), extra_axis_keys().end());
  cli::add_train_flags(app, o.base, skip);
  // Each axis flag reuses train_lm's help text and group, harvested from a scratch App.
  lm::TrainConfig scratch = o.base;
  CLI::App harvest;
  cli::add_train_flags(harvest, scratch);
  const nlohmann::json defaults = lm::to_json(o.base);
  for (const std::string& key : extra_axis_keys()) {
    const CLI::Option* like = harvest.get_option("--" + key);
    const bool boolean = defaults[key].is_boolean();
    app.add_option("--" + key, raw_[key],
                   like->get_description() + (boolean ? " (true or false)" : "") + "; several values: one run per value")
        ->default_str(setting_text(defaults[key]))
        ->type_name(boolean ? "BOOL" : "VALUE")
        ->group(like->get_group());
  }
}

std::set<std::string> AxisFlags::apply() {
  std::set<std::string> given;
  for (const CLI::Option* opt : app_.get_options()) {
    if (opt->count() == 0 || opt->get_lnames().empty()) continue;
    given.insert(opt->get_lnames()[0]);
  }
  const nlohmann::json defaults = lm::to_json(o_.base);
  nlohmann::json base = defaults;
  for (const std::string& key : extra_axis_keys()) {  // --help order: the order of the axes
    if (!given.count(key)) continue;
    const std::vector<std::string>& values = raw_[key];
    std::vector<std::string> texts;
    for (const auto& v : values) {
      const std::string t = canonical(o_.base, key, v, defaults[key].is_boolean());
      if (std::find(texts.begin(), texts.end(), t) == texts.end()) texts.push_back(t);
    }
    base[key] = setting_value(key, texts[0]);
    if (texts.size() > 1) o_.axes.emplace_back(key, texts);
  }
  // Set together, then checked: --dim 30 --heads 5 is valid, though --dim 30 with the default
  // 4 heads is not.
  o_.base = lm::train_config_from_json(base);
  return given;
}

}  // namespace tapegrad::lab
