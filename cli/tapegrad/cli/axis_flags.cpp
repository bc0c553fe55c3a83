#include "tapegrad/cli/axis_flags.h"

#include <CLI/CLI.hpp>
#include <algorithm>

#include "tapegrad/cli/cli.h"
#include "tapegrad/lab/grid.h"
#include "tapegrad/lm/settings.h"
#include "tapegrad/lm/usage_error.h"
#include "tapegrad/cli/train_flags.h"

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
  cli::require_decimal_integers(one);  // the program's own rules (run_cli): "010" and "yes" are refused
  cli::require_boolean_words(one);
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
  skip.insert(axis_keys().begin(), axis_keys().end());
  cli::add_train_flags(app, o.base, skip);
  // Each axis flag reuses train_lm's help text and group, harvested from a scratch App; the run
  // identity's (norm, lr, seed, ...) are listed under "Sweep".
  lm::TrainConfig scratch = o.base;
  CLI::App harvest;
  cli::add_train_flags(harvest, scratch);
  for (const lm::Setting& s : lm::settings()) {  // --help order
    if (!is_axis(s.key)) continue;
    const CLI::Option* like = harvest.get_option("--" + s.key);
    const bool boolean = lm::setting_json(s, o.base).is_boolean();
    std::string shown;
    for (const auto& v : axis_values(o, s.key)) shown += (shown.empty() ? "" : " ") + setting_text(v);
    app.add_option("--" + s.key, raw_[s.key],
                   like->get_description() + (boolean ? " (true or false)" : "") + "; several values: one run per value")
        ->default_str(shown)
        ->type_name(boolean ? "BOOL" : "VALUE")
        ->group(identity_part(s.key) ? std::string("Sweep") : like->get_group());
  }
}

std::set<std::string> AxisFlags::apply() {
  std::set<std::string> given;
  for (const CLI::Option* opt : app_.get_options()) {
    if (opt->count() == 0 || opt->get_lnames().empty()) continue;
    given.insert(opt->get_lnames()[0]);
  }
  for (const std::string& key : axis_keys()) {
    if (!given.count(key)) continue;
    const bool boolean = axis_values(o_, key)[0].is_boolean();
    std::vector<nlohmann::json> values;
    for (const auto& v : raw_[key]) values.push_back(setting_value(key, canonical(o_.base, key, v, boolean)));
    // Checked together later (expand): --dim 30 --heads 5 is valid, though --dim 30 with the
    // default 4 heads is not.
    set_axis(o_, key, values);
  }
  return given;
}

}  // namespace tapegrad::lab
