#include "tapegrad/lab/grid.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "tapegrad/text/lexical.h"
#include "tapegrad/lab/run_spec.h"
#include "tapegrad/lab/records.h"
#include "tapegrad/lab/sweep_settings.h"
#include "tapegrad/io/file.h"
#include "tapegrad/io/json.h"
#include "tapegrad/lm/recipes.h"
#include "tapegrad/lm/settings.h"
#include "tapegrad/lm/usage_error.h"

namespace tapegrad::lab {

namespace fs = std::filesystem;

namespace {
// The settings of one role in a sweep (lm/settings.h), in the table's order.
std::vector<std::string> keys_with(lm::SweepRole role) {
  std::vector<std::string> keys;
  for (const lm::Setting& s : lm::settings())
    if (s.sweep == role) keys.push_back(s.key);
  return keys;
}
bool contains(const std::vector<std::string>& list, const std::string& x) {
  return std::find(list.begin(), list.end(), x) != list.end();
}
}  // namespace

const std::vector<std::string>& axis_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const std::string& key : keys_with(lm::SweepRole::kAxis))
      if (!identity_part(key)) k.push_back(key);
    std::vector<const IdentityPart*> inner;
    for (const IdentityPart& p : run_identity()) inner.push_back(&p);
    std::sort(inner.begin(), inner.end(), [](const auto* x, const auto* y) { return x->nesting < y->nesting; });
    for (const IdentityPart* p : inner) k.push_back(p->key);
    return k;
  }();
  return keys;
}

bool is_axis(const std::string& key) { return contains(axis_keys(), key); }


namespace {

// Settings the runs of one folder must share (see grid.h), and settings the lab sets or that
// change nothing a run computes (left out when comparing and reproducing).
std::vector<std::string> fixed_train() { return keys_with(lm::SweepRole::kShared); }
std::vector<std::string> bookkeeping() {
  std::vector<std::string> k = keys_with(lm::SweepRole::kLab);
  for (const std::string& key : keys_with(lm::SweepRole::kFree)) k.push_back(key);
  return k;
}

const Axis* find_axis(const SweepOptions& o, const std::string& key) {
  for (const Axis& a : o.axes)
    if (a.key == key) return &a;
  return nullptr;
}

}  // namespace

std::vector<nlohmann::json> axis_values(const SweepOptions& o, const std::string& key) {
  if (const Axis* a = find_axis(o, key)) return a->values;
  const lm::Setting* s = lm::find_setting(key);
  check(s != nullptr, "unknown setting '", key.substr(0, 64), "'");
  return {lm::setting_json(*s, o.base)};
}

void set_axis(SweepOptions& o, const std::string& key, const std::vector<nlohmann::json>& given) {
  check(is_axis(key), "--", key.substr(0, 64), " cannot be an axis of a sweep");
  check(!given.empty(), "--", key, " needs at least one value");
  std::vector<nlohmann::json> values;
  for (const auto& v : given) {
    nlohmann::json c = canonical_value(key, v);
    // A repeated value would be one run under two names, or one run where two were meant.
    if (std::find(values.begin(), values.end(), c) != values.end())
      throw lm::UsageError(cat("--", key, " ", setting_text(c),
                               " is given twice (in any spelling, a value of an axis is one run): give each value once"));
    values.push_back(std::move(c));
  }
  const lm::Setting& s = *lm::find_setting(key);
  const nlohmann::json base = lm::setting_json(s, o.base);
  // One value is held in the base; so is the first of several for a setting whose base value is
  // not among them (the identity settings name every run's value in its id, so for them it is moot).
  if (values.size() == 1 || std::find(values.begin(), values.end(), base) == values.end())
    lm::set_setting(s, o.base, values[0]);
  const auto it = std::find_if(o.axes.begin(), o.axes.end(), [&](const Axis& a) { return a.key == key; });
  if (values.size() == 1) {
    if (it != o.axes.end()) o.axes.erase(it);
    return;
  }
  if (it != o.axes.end()) {
    it->values = std::move(values);
    return;
  }
  o.axes.push_back({key, std::move(values)});
  // The sweep's order, so that ids and tables do not depend on the order flags were given in.
  const auto rank = [](const Axis& a) { return std::find(axis_keys().begin(), axis_keys().end(), a.key) - axis_keys().begin(); };
  std::stable_sort(o.axes.begin(), o.axes.end(), [&](const Axis& a, const Axis& b) { return rank(a) < rank(b); });
}


std::set<std::string> every_setting() {
  std::set<std::string> keys;
  const nlohmann::json train = lm::to_json(lm::TrainConfig{}), sweep = shared_sweep_settings(SweepOptions{});  // named: items() would dangle
  for (const auto& [key, value] : train.items()) keys.insert(key);
  for (const auto& [key, value] : sweep.items()) keys.insert(key);
  return keys;
}

std::string setting_text(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number_float()) {
    const double d = v.get<double>();
    // A float setting that holds a whole number is written as one (64, not 64.0), as %g does.
    return text::exact_decimal(d);
  }
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

namespace {
// A swept value's text becomes part of file names (run ids).
void check_file_safe(const std::string& key, const std::string& text) {
  const std::string shown = cat("'", text.substr(0, 64), text.size() > 64 ? "...'" : "'");
  const bool safe = !text.empty() && text.size() <= 64 && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '+' || c == '-';
  });
  check(safe, "--", key, " ", shown, ": a swept value must be 1 to 64 of [A-Za-z0-9.+-]");
}
}  // namespace

nlohmann::json canonical_value(const std::string& key, const nlohmann::json& value) {
  const lm::Setting* s = lm::find_setting(key);
  check(s != nullptr, "unknown setting '", key.substr(0, 64), "'");
  if (value.is_string()) check_file_safe(key, value.get<std::string>());
  check(!value.is_number_float() || std::isfinite(value.get<double>()), "--", key, " ", setting_text(value),
        ": must be a finite number");
  // Through the setting's own reader: the type is the field's, a name must be registered.
  lm::TrainConfig scratch;
  try {
    lm::set_setting(*s, scratch, value);
  } catch (const Error& e) {
    std::string why = e.what();
    for (const std::string& prefix : {std::string("training config: "), "'" + key + "': "})
      if (why.starts_with(prefix)) why = why.substr(prefix.size());
    throw Error(cat("--", key, " '", setting_text(value).substr(0, 64), "': ", why));
  }
  nlohmann::json c = lm::setting_json(*s, scratch);
  check_file_safe(key, setting_text(c));
  return c;
}

nlohmann::json setting_value(const std::string& key, const std::string& text) {
  const lm::Setting* s = lm::find_setting(key);
  check(s != nullptr, "unknown setting '", key.substr(0, 64), "'");
  check_file_safe(key, text);
  const std::string shown = "'" + text + "'";
  const nlohmann::json like = lm::setting_json(*s, lm::TrainConfig{});
  if (like.is_boolean()) {
    check(text == "true" || text == "false", "--", key, " ", shown, ": must be true or false");
    return text == "true";
  }
  if (like.is_number_integer()) {
    const bool is_unsigned = like.is_number_unsigned();
    uint64_t u = 0;
    int64_t i = 0;
    const char* end = text.data() + text.size();
    const std::string form = text::decimal_whole_number(text, !is_unsigned);  // "010" is not 10, nor 8
    check(form.empty(), "--", key, " ", shown, ": ", form);
    const auto r = is_unsigned ? std::from_chars(text.data(), end, u) : std::from_chars(text.data(), end, i);
    check(r.ec == std::errc() && r.ptr == end, "--", key, " ", shown, ": must be a whole number",
          is_unsigned ? " in [0, 2^64 - 1]" : "");
    return canonical_value(key, is_unsigned ? nlohmann::json(u) : nlohmann::json(i));
  }
  if (like.is_number()) {
    double d = 0;
    const char* end = text.data() + text.size();
    const auto r = std::from_chars(text.data(), end, d);
    check(r.ec == std::errc() && r.ptr == end && std::isfinite(d), "--", key, " ", shown, ": must be a finite number");
    return canonical_value(key, d);
  }
  return canonical_value(key, text);
}

std::map<std::string, std::string> base_values(const SweepOptions& o) {
  std::map<std::string, std::string> out;
  for (const auto& key : axis_keys())
    if (!identity_part(key)) out[key] = setting_text(axis_values(o, key)[0]);
  return out;
}

namespace {
// Every setting with its values as listed in shapes, commands and sweep.json: the run identity's
// (one value or several), then the other axes.
std::vector<Axis> listed_axes(const SweepOptions& o) {
  std::vector<Axis> list;
  for (const IdentityPart& p : run_identity()) list.push_back({p.key, axis_values(o, p.key)});
  for (const Axis& a : o.axes)
    if (!identity_part(a.key)) list.push_back(a);
  return list;
}
}  // namespace

std::string grid_shape(const SweepOptions& o) {
  std::string s;
  for (const auto& [key, values] : listed_axes(o)) {
    const IdentityPart* p = identity_part(key);
    if (p && values.size() == 1 && key != "norm" && key != "lr" && key != "seed") continue;
    const std::string name = p && values.size() > 1 ? p->plural : key;
    s += (s.empty() ? "" : " x ") + std::to_string(values.size()) + " " + name;
  }
  return s;
}

std::string reproduce_command(const SweepOptions& o, const SweepOptions& defaults) {
  // Every value shell-quoted: a path like "my data $(touch X).txt" pastes as that path, not a command.
  using text::shell_quote;
  std::string cmd = "compare_norms";
  std::set<std::string> listed;
  for (const auto& [key, values] : listed_axes(o)) {
    cmd += cat(" --", key);
    for (const auto& v : values) cmd += cat(" ", shell_quote(setting_text(v)));
    listed.insert(key);
  }
  const nlohmann::json train = lm::to_json(o.base), was = lm::to_json(defaults.base);
  for (const auto& [key, value] : train.items()) {
    // A setting the user named stays in the command at its default too: a recipe must not take it.
    if (listed.count(key) || contains(bookkeeping(), key) || (value == was[key] && !o.given.count(key))) continue;
    // A bool that cannot be an axis is a flag (--eval-train / --no-eval-train); an axis takes its value.
    if (value.is_boolean() && !is_axis(key)) cmd += (value.get<bool>() ? " --" : " --no-") + key;
    else cmd += " --" + key + " " + shell_quote(setting_text(value));
  }
  const nlohmann::json sweep = shared_sweep_settings(o), sweep_was = shared_sweep_settings(defaults);
  for (const auto& [key, value] : sweep.items())
    if (value != sweep_was[key]) cmd += " --" + key + " " + shell_quote(setting_text(value));
  return cmd + " --out " + shell_quote(o.out);
}

nlohmann::json grid_json(const SweepOptions& o) {
  nlohmann::json train = lm::to_json(o.base);
  for (const IdentityPart& p : run_identity()) train.erase(p.key);  // "axes" holds them, with one value or several
  for (const auto& k : bookkeeping()) train.erase(k);
  nlohmann::json axes = nlohmann::json::object();
  for (const auto& [key, values] : listed_axes(o)) axes[key] = values;
  nlohmann::json identity = nlohmann::json::array();  // the run schema, for readers of the folder (the plots)
  for (const IdentityPart& p : run_identity()) identity.push_back({p.key, p.prefix});
  nlohmann::json grid = {{"format", 2}, {"train", train}, {"axes", axes}, {"sweep", shared_sweep_settings(o)}, {"identity", identity}};
  if (!o.given.empty()) grid["given"] = o.given;  // sorted: a std::set
  // Every run this folder records carries its proof (sweep.h): a run without one is unproven.
  grid["run_proofs"] = true;
  // For the folder's readers (the plots): what each column of runs.csv and the curves is
  // (records.h), and each shared setting as a runs.csv "settings" cell writes a value.
  grid["schema"] = records_schema();
  nlohmann::json train_text = nlohmann::json::object();
  for (const auto& [key, value] : train.items()) train_text[key] = setting_text(value);
  grid["train_text"] = train_text;
  // Which runs each recipe of the grid is for (lm/recipes.h), so that readers of the folder (the
  // plots) name it beside the groups it applied to, as the report does.
  nlohmann::json targets = nlohmann::json::object();
  for (const auto& name : axis_values(o, "recipe"))
    for (const lm::Recipe* r : lm::recipes_in(name.get<std::string>())) targets[r->name] = {{r->target_key, r->target_value}};
  if (!targets.empty()) grid["recipe_targets"] = targets;
  return grid;
}

namespace {

// The grid stored in `path`, read strictly (its values become run ids, so file names).
SweepOptions read_grid(const std::string& path, const SweepOptions& like, const std::vector<RunRecord>& recorded) {
  nlohmann::json j;
  try {
    j = io::parse_json(io::read_file(path, kMaxGridBytes), path);
  } catch (const Error& e) {
    throw Error(cat(e.what(), "; delete it to adopt this sweep's settings"));
  }
  check(j.is_object(), path, ": expected a JSON object; delete it to adopt this sweep's settings");
  SweepOptions g = like;
  g.axes.clear();
  const bool v2 = j.contains("format");
  if (v2) check(j["format"] == 2, path, ": unknown format ", io::json_excerpt(j["format"]), " (this compare_norms reads 2)");
  for (const char* part : {"train", "axes", "sweep"})
    if (v2) check(j.contains(part) && j[part].is_object(), path, ": '", part, "' must be an object");
  // Format 1 held the training settings and the sweep-level ones side by side.
  nlohmann::json train = v2 ? j["train"] : j;
  read_shared_sweep_settings(v2 ? j["sweep"] : j, g, path);
  if (!v2)
    for (const auto& [key, value] : shared_sweep_settings(g).items()) train.erase(key);
  nlohmann::json full = lm::to_json(lm::TrainConfig{});  // settings newer than the file were at their defaults
  for (const auto& [key, value] : train.items()) {
    check(full.contains(key), path, ": unknown setting '", key.substr(0, 64), "'");
    full[key] = value;
  }
  try {
    g.base = lm::train_config_from_json(full);
  } catch (const Error& e) {
    throw Error(cat(path, ": ", e.what()));
  }
  g.base.threads = like.base.threads;
  g.given.clear();
  if (j.contains("given")) {  // settings the user named (sweep.h): recipes leave them alone
    check(j["given"].is_array() && j["given"].size() <= 256, path, ": 'given' must be a list of setting names");
    for (const auto& key : j["given"]) {
      check(key.is_string() && lm::find_setting(key.get<std::string>()) != nullptr, path, ": 'given' holds ",
            io::json_excerpt(key), ", not a training setting");
      g.given.insert(key.get<std::string>());
    }
  }
  if (v2) {
    for (const auto& [key, values] : j["axes"].items()) {
      check(is_axis(key), path, ": '", key.substr(0, 64), "' cannot be an axis");
      check(values.is_array() && !values.empty() && values.size() <= 4096, path, ": axis '", key,
            "' must be a list of 1 to 4096 values");
      std::vector<nlohmann::json> typed;
      for (const auto& v : values) {
        try {
          typed.push_back(setting_value(key, setting_text(v)));  // as strictly as a flag's text
        } catch (const Error& e) {
          throw Error(cat(path, ": axis ", e.what()));
        }
      }
      set_axis(g, key, typed);
    }
  } else {  // format 1: the identity settings take the values the folder's records hold
    for (const IdentityPart& p : run_identity()) {
      std::vector<nlohmann::json> values;
      for (const auto& r : recorded)
        if (std::find(values.begin(), values.end(), r.spec.at(p.key)) == values.end()) values.push_back(r.spec.at(p.key));
      if (!values.empty() && values[0].is_number()) std::sort(values.begin(), values.end());
      if (!values.empty()) set_axis(g, p.key, values);
    }
  }
  try {
    expand(g);  // every run the file describes can train (e.g. no lr of -1)
  } catch (const Error& e) {
    throw Error(cat(path, ": ", e.what()));
  }
  return g;
}

}  // namespace

SweepOptions resolve_sweep(const SweepOptions& o, const std::set<std::string>& given) {
  const std::string path = o.out + "/sweep.json";
  std::error_code ec;
  if (!fs::exists(path, ec)) return o;
  std::vector<RunRecord> recorded;
  for (const auto& [id, r] : recorded_runs(o.out)) recorded.push_back(r);
  SweepOptions g = read_grid(path, o, recorded);
  const auto refuse_change = [&](const std::string& key, const nlohmann::json& was, const nlohmann::json& now) {
    check(was == now, o.out, " holds runs trained with --", key, " ", io::json_excerpt(was), ", this sweep asks for ",
          io::json_excerpt(now), ": a folder's runs share it, so give another --out, or the same setting (", path, ")");
  };
  // Settings that cannot be axes must agree (when this command gives them).
  const nlohmann::json stored_train = lm::to_json(g.base), asked_train = lm::to_json(o.base);
  for (const auto& key : fixed_train())
    if (given.count(key)) refuse_change(key, stored_train[key], asked_train[key]);
  const nlohmann::json stored_sweep = shared_sweep_settings(g), asked_sweep = shared_sweep_settings(o);
  for (const auto& [key, value] : stored_sweep.items())
    if (given.count(key)) refuse_change(key, value, asked_sweep[key]);
  // Axes grow: the stored values, then this command's new ones (a setting given one value that
  // differs from the stored one becomes an axis).
  for (const std::string& key : axis_keys()) {
    if (!given.count(key)) continue;
    std::vector<nlohmann::json> values = axis_values(g, key);
    for (const auto& v : axis_values(o, key))
      if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
    set_axis(g, key, values);
  }
  g.jobs = o.jobs;
  g.given.insert(o.given.begin(), o.given.end());
  return g;
}

std::vector<RunSpec> expand(const SweepOptions& o) {
  // Counted before anything is allocated: axes from a file (or a long command line) multiply.
  constexpr uint64_t kMaxRuns = 100000;
  uint64_t n = 1;
  std::string shape;
  for (const Axis& a : o.axes) {
    shape += cat(shape.empty() ? "" : " x ", a.values.size(), " ", a.key);
    n = a.values.empty() ? 0 : (n > kMaxRuns / a.values.size() ? kMaxRuns + 1 : n * a.values.size());
  }
  check(n <= kMaxRuns, "a sweep of ", shape, " is more than ", kMaxRuns, " runs");
  // Every run names the identity settings; beyond them, the values that differ from the base.
  RunSpec first;
  for (const IdentityPart& p : run_identity()) first.values[p.key] = axis_values(o, p.key)[0];
  std::vector<RunSpec> specs{first};
  for (const Axis& a : o.axes) {  // outermost first
    const nlohmann::json base = lm::setting_json(*lm::find_setting(a.key), o.base);
    std::vector<RunSpec> next;
    next.reserve(specs.size() * a.values.size());
    for (const RunSpec& s : specs)
      for (const nlohmann::json& v : a.values) {
        RunSpec t = s;
        if (identity_part(a.key) || v != base) t.values[a.key] = v;
        next.push_back(std::move(t));
      }
    specs = std::move(next);
  }
  std::set<std::string> ids;
  for (const auto& s : specs) check(ids.insert(s.id()).second, "sweep: run ", s.id(), " appears twice (repeated axis value?)");
  // Every combination must be a valid training run (e.g. --heads must divide --dim in each).
  for (const auto& s : specs) {
    const std::string where = s.settings_text();
    try {
      run_config(o, s, 1).validate();
    } catch (const lm::SettingError& e) {
      throw lm::SettingError(where.empty() ? e.message() : cat(e.message(), " (in the runs with ", where, ")"));
    } catch (const lm::UsageError& e) {
      throw lm::UsageError(where.empty() ? std::string(e.what()) : cat(e.what(), " (in the runs with ", where, ")"));
    }
  }
  return specs;
}

lm::TrainConfig run_config(const SweepOptions& o, const RunSpec& spec, int threads) {
  lm::TrainConfig c = o.base;
  for (const auto& [key, value] : spec.values) lm::set_setting(*lm::find_setting(key), c, value);
  c.min_lr = c.lr * o.min_lr_ratio;
  c.instrument = true, c.threads = threads, c.checkpoint_every = 0;
  c.eval_every = o.evals > 0 ? std::max<int64_t>(1, c.steps / o.evals) : 0;  // and at the last step (lm::run)
  // A recipe gives the runs of its target its settings, except those the run is named by, those
  // the sweep varies, those the user named (o.given) and those holding a value of their own (one
  // that differs from train_lm's default: folders from before `given` was recorded); runs of
  // other targets keep theirs.
  std::set<std::string> swept, keep;
  for (const IdentityPart& p : run_identity()) swept.insert(p.key);
  for (const Axis& a : o.axes) swept.insert(a.key);
  keep = swept;
  keep.insert(o.given.begin(), o.given.end());
  const nlohmann::json base = lm::to_json(o.base), defaults = lm::to_json(lm::TrainConfig{});
  for (const auto& [key, value] : base.items())
    if (value != defaults[key]) keep.insert(key);
  lm::apply_recipe(c, swept, keep, /*other_targets_allowed=*/true);
  return c;
}

}  // namespace tapegrad::lab
