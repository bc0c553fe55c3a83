// The settings table: every field of TrainConfig declared once, with its key (the flag and JSON
// name), help, group, range and role in a sweep. Everything that lists settings is derived from it:
// train_lm's flags and --help (cli/tapegrad/cli/train_flags.cpp), config.json both ways, the
// checkpoint's split between the model config and the training config, validate()'s range
// checks, and the lab's classes of settings (axes, shared per folder, set by the lab).
//
// Adding a setting: a field in TrainConfig and a row in settings.cpp. A model knob is a field of
// nn::DecoderConfig (TrainConfig::model) and its row in nn::decoder_fields(), which carries its help,
// range and choices: the table makes the setting of it (flag and key the field's with '-' for
// '_'), nothing in lm names it. Tests walk TrainConfig's and DecoderConfig's fields and fail for a
// field without a row, and round-trip every model knob at a value other than its default through
// a checkpoint.
#pragma once

#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tapegrad/lm/train_config.h"

namespace tapegrad::lm {

enum class SettingGroup { kModel, kData, kOptimisation, kMeasurement, kBookkeeping };
// "Model", "Data", ... (the --help section).
std::string to_string(SettingGroup g);

// A setting's part in a sweep of the lab (lab/grid.h).
enum class SweepRole {
  kAxis,    // may take several values, one run per value
  kShared,  // one value for every run of a folder: its runs are compared on it (data, measurements)
  kLab,     // the lab sets it for each run (min-lr from --min-lr-ratio, evaluations, ...): no lab flag
  kFree,    // changes nothing a run computes (threads): passed through, never compared
};

// Where the setting lives: a field of TrainConfig, or (a model knob) a field of its model config,
// TrainConfig::model.
using SettingMember = std::variant<std::string TrainConfig::*, int64_t TrainConfig::*, uint64_t TrainConfig::*,
                                   int TrainConfig::*, double TrainConfig::*, bool TrainConfig::*, nn::DecoderMember>;

struct Setting {
  std::string key;  // "min-lr": the flag (--min-lr) and the JSON key
  SettingMember member;
  SettingGroup group;
  std::string help;
  SweepRole sweep = SweepRole::kAxis;
  std::optional<SettingRange> range{};   // numbers: validate() checks it, naming the flag ("--clip must be >= 0")
  std::optional<double> at_most{};       // integers: a size bound ("--dim 70000 is too large (at most 65536)")
  std::vector<std::string> choices{};    // names a text setting may take (the enums use their registries)
  // Former names of choices, {old, today's}: read as today's wherever a value enters (flags, JSON
  // from checkpoints and sweep folders, Python), so renaming a choice never orphans old folders.
  std::vector<std::pair<std::string, std::string>> renamed{};
  // For a text setting named from an open registry (optimizer, schedule): its names, read at each
  // check, so entries a program registers after the table was built are accepted.
  std::function<std::vector<std::string>()> registry_names{};
  bool negatable = false;                // a bool flag with a --no- form (--tie-head / --no-tie-head)
  bool path = false;                     // a file path: stored absolute
};

// The names a text setting may take now: `choices`, or its registry's names (empty: any text).
std::vector<std::string> setting_choices(const Setting& s);

// Every setting, in --help order.
const std::vector<Setting>& settings();
// The setting named `key`, or nullptr.
const Setting* find_setting(std::string_view key);

// Whether the setting is a model knob (a field of TrainConfig::model, stored in a checkpoint's
// model config, not its "train" section).
inline bool in_model(const Setting& s) { return std::holds_alternative<nn::DecoderMember>(s.member); }
// The nn::decoder_fields() row a model knob was made from (an Error for another setting).
const nn::DecoderField& decoder_field(const Setting& s);

// f(value) with a reference to the setting's field in c (c.model's for a model knob); `Config` is
// TrainConfig or const TrainConfig.
template <typename Config, typename F>
decltype(auto) visit_setting(const Setting& s, Config& c, F&& f) {
  return std::visit(
      [&](auto member) -> decltype(auto) {
        if constexpr (std::is_same_v<decltype(member), nn::DecoderMember>)
          return std::visit([&](auto m) -> decltype(auto) { return f(c.model.*m); }, member);
        else
          return f(c.*member);
      },
      s.member);
}

// A setting's value in `c` as JSON (names for the typed choices), and set from JSON (strictly: a
// wrong type or unknown name is an Error naming the key).
nlohmann::json setting_json(const Setting& s, const TrainConfig& c);
void set_setting(const Setting& s, TrainConfig& c, const nlohmann::json& value);
// `text` with a former name of s's choices replaced by today's (Setting::renamed).
std::string current_name(const Setting& s, std::string text);
// A stored setting value as today's table writes it: a former name replaced (other values as given).
nlohmann::json current_value(std::string_view key, nlohmann::json value);

// The table as Markdown, one section per group ("| flag | default | what it sets |"), for
// docs/training.md (a test keeps the page equal to it). Defaults are TrainConfig{}'s.
std::string settings_markdown();

}  // namespace tapegrad::lm
