// A run of a sweep: the value of each setting the sweep varies, typed as the setting is
// (lm/settings.h: a learning rate a double, a seed an unsigned integer, a norm its name).
//
// The run's schema. A run id, the leading columns of runs.csv and curves.csv, and the report's
// group labels come from one table, run_identity(): the settings every run is named by whether or
// not its sweep varies them —
//   layernorm _ pre _ lr0.003 _ s1 _ L4 _ w30
//   norm       placement lr    seed layers warmup
// — so the ids written by every version of the lab stay the same, and a row is written and read
// by the same list. Any other setting joins the id as "_key=value" where the run's value differs
// from the sweep's base ("..._w30_dim=64"), so adding values to a grid never renames its runs.
// Nothing else about these six is special: in the grid (grid.h) they are axes like any other.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tapegrad::lab {

struct IdentityPart {
  std::string key;     // the setting ("lr")
  std::string prefix;  // before its value in the id and in labels ("lr" -> "lr0.003"; "" for names)
  std::string plural;  // in a grid's shape: "5 lrs"
  int nesting = 0;     // the sweep's order (outermost 0), inside every other axis: a seed's norms
                       // are neighbours, so they train side by side and their timings pair up
};
// The settings in every run id, in id order (which is also the column order).
const std::vector<IdentityPart>& run_identity();
// The identity part for `key`, or nullptr.
const IdentityPart* identity_part(const std::string& key);

struct RunSpec {
  // Setting key -> value: every identity setting, and the sweep's other axes where this run's value
  // differs from the base. Values are canonical (lab::canonical_value), so equal settings compare
  // equal here and in the id.
  std::map<std::string, nlohmann::json> values;

  // The value of `key`; an Error names the key when the run has none.
  const nlohmann::json& at(const std::string& key) const;
  template <typename V>
  V get(const std::string& key) const {
    return at(key).template get<V>();
  }
  // The value as run ids and tables write it (grid.h: setting_text).
  std::string text(const std::string& key) const;

  // "layernorm_pre_lr0.003_s1_L4_w30" (+ "_dim=64" per other setting): stable, file-name safe,
  // unique within a sweep.
  std::string id() const;
  // The values of the settings beyond the identity ones, as text.
  std::map<std::string, std::string> settings() const;
  // "dim=64 qk-norm=rmsnorm" (as runs.csv's settings column, with ';' for ' '); "" for none.
  std::string settings_text(const char* separator = " ") const;

  bool operator==(const RunSpec&) const = default;
};

}  // namespace tapegrad::lab
