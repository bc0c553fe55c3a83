// The sweep's own settings — the lab's judgements and scheduling, beside the training settings of
// lm/settings.h — declared once: key, member, help, range and whether a folder's runs share it
// (stored in sweep.json's "sweep"). compare_norms' flags, tapegrad.lab.sweep's keywords,
// sweep.json both ways and the reproduce command derive from this table, so the CLI and Python
// check the same ranges with the same messages.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tapegrad/lab/sweep_options.h"

namespace tapegrad::lab {

struct SweepSetting {
  std::string key;  // "min-lr-ratio": the flag, the sweep.json key (Python: min_lr_ratio)
  std::variant<double SweepOptions::*, int64_t SweepOptions::*, int SweepOptions::*, bool SweepOptions::*,
               std::string SweepOptions::*>
      member;
  std::string help;
  double low = 0, high = 0;  // a number's closed range; a text's length (low: it may not be empty when 1)
  bool shared = true;  // stored in sweep.json: a folder's runs are judged with one value (jobs, out, ... are not)
  std::string former{};  // the flag's former spelling, still accepted on the command line ("plot")
  // A text's further check: "" when the value is good, else what is wrong with it ("python": a
  // program that can run here).
  std::string (*fault)(const std::string& value) = nullptr;
  std::string type_name() const;  // "NUMBER", "TEXT" or "" (a switch: --key / --no-key)
};

// Every sweep setting, in --help order.
const std::vector<SweepSetting>& sweep_settings();
// The row named `key`, or nullptr.
const SweepSetting* find_sweep_setting(std::string_view key);

// The value in `o`, as JSON.
nlohmann::json sweep_setting_json(const SweepSetting& s, const SweepOptions& o);
// Sets it from JSON (a number, a whole one for the integer rows, checked against the range; a
// boolean; a string). A UsageError names the setting as `prefix` + key ("--evals" for flags,
// "evals" for files and Python) and the value: "--min-lr-ratio must be in [0, 1], got 5".
void set_sweep_setting(const SweepSetting& s, SweepOptions& o, const nlohmann::json& value, std::string_view prefix);
// The same from a flag's text, read strictly ("1e-3", "10"; never "0x10", "010" or "nan"; a
// switch's "true" / "false").
void set_sweep_setting(const SweepSetting& s, SweepOptions& o, const std::string& text, std::string_view prefix);

// The shared rows' values, as sweep.json's "sweep" holds them; and read back from it (a key the
// file lacks keeps o's value: older folders; errors name `where`).
nlohmann::json shared_sweep_settings(const SweepOptions& o);
void read_shared_sweep_settings(const nlohmann::json& j, SweepOptions& o, const std::string& where);

}  // namespace tapegrad::lab
