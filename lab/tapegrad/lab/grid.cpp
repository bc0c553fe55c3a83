#include "tapegrad/lab/grid.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "tapegrad/text/lexical.h"
#include "tapegrad/lab/sweep.h"
#include "tapegrad/io/file.h"
#include "tapegrad/io/json.h"
#include "tapegrad/lm/recipes.h"
#include "tapegrad/lm/settings.h"

namespace tapegrad::lab {

namespace fs = std::filesystem;

const std::vector<std::string> kCoreAxes = {"placement", "layers", "warmup", "lr", "seed", "norm"};

namespace {
// The settings of one role in a sweep (lm/settings.h), in the table's order.
std::vector<std::string> keys_with(lm::SweepRole role) {
  std::vector<std::string> keys;
  for (const lm::Setting& s : lm::settings())
    if (s.sweep == role) keys.push_back(s.key);
  return keys;
}
}  // namespace

const std::vector<std::string>& extra_axis_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const std::string& key : keys_with(lm::SweepRole::kAxis))
      if (std::find(kCoreAxes.begin(), kCoreAxes.end(), key) == kCoreAxes.end()) k.push_back(key);
    return k;
  }();
  return keys;
}

namespace {
bool contains(const std::vector<std::string>& list, const std::string& x) {
  return std::find(list.begin(), list.end(), x) != list.end();
}
// Whether `key` is one of o's other axes (several values), as opposed to held in o.base.
bool has_axis(const SweepOptions& o, const std::string& key) {
  return std::any_of(o.axes.begin(), o.axes.end(), [&](const auto& a) { return a.first == key; });
}
}  // namespace

bool is_axis(const std::string& key) { return contains(kCoreAxes, key) || contains(extra_axis_keys(), key); }

namespace {

// Settings the runs of one folder must share (see grid.h), and settings the lab sets or that
// change nothing a run computes (left out when comparing and reproducing).
std::vector<std::string> fixed_train() { return keys_with(lm::SweepRole::kShared); }
std::vector<std::string> bookkeeping() {
  std::vector<std::string> k = keys_with(lm::SweepRole::kLab);
  for (const std::string& key : keys_with(lm::SweepRole::kFree)) k.push_back(key);
  return k;
}

nlohmann::json sweep_level(const SweepOptions& o) {
  return {{"min-lr-ratio", o.min_lr_ratio},
          {"divergence-factor", o.divergence_factor},
          {"divergence-patience", o.divergence_patience},
          {"spike-factor", o.spike_factor},
          {"evals", o.evals}};
}

void read_sweep_level(const nlohmann::json& j, SweepOptions& o, const std::string& where) {
  const auto get = [&](const char* key, auto& out) {
    if (!j.contains(key)) return;  // older folders: the default
    const auto& v = j[key];
    using V = std::decay_t<decltype(out)>;
    const bool ok = std::is_integral_v<V> ? v.is_number_integer() : v.is_number();
    check(ok, where, ": '", key, "' must be a number, got ", io::json_excerpt(v));
    out = v.get<V>();
  };
  get("min-lr-ratio", o.min_lr_ratio), get("divergence-factor", o.divergence_factor);
  get("divergence-patience", o.divergence_patience), get("spike-factor", o.spike_factor), get("evals", o.evals);
  // The ranges compare_norms' flags allow.
  const auto in = [&](const char* key, double v, double low, double high) {
    check(v >= low && v <= high, where, ": '", key, "' must be in [", low, ", ", high, "], got ", v);
  };
  in("min-lr-ratio", o.min_lr_ratio, 0, 1), in("divergence-factor", o.divergence_factor, 1, 1e9);
  in("divergence-patience", static_cast<double>(o.divergence_patience), 1, 1e9);
  in("spike-factor", o.spike_factor, 1, 1e9), in("evals", static_cast<double>(o.evals), 0, 1e9);
}

std::string exact_double(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%g", v);
  if (std::strtod(b, nullptr) != v) std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

// The axes of `o` as (key, values as text), core first.
std::vector<std::pair<std::string, std::vector<std::string>>> all_axes(const SweepOptions& o) {
  std::vector<std::pair<std::string, std::vector<std::string>>> axes;
  const auto texts = [](const auto& values) {
    std::vector<std::string> t;
    for (const auto& v : values) t.push_back(setting_text(nlohmann::json(v)));
    return t;
  };
  axes.emplace_back("placement", texts(o.placements));
  axes.emplace_back("layers", texts(o.layers));
  axes.emplace_back("warmup", texts(o.warmups.empty() ? std::vector<int64_t>{o.base.warmup} : o.warmups));
  axes.emplace_back("lr", texts(o.lrs));
  axes.emplace_back("seed", texts(o.seeds));
  axes.emplace_back("norm", texts(o.norms));
  for (const auto& a : o.axes) axes.push_back(a);
  return axes;
}

}  // namespace

void set_axis(SweepOptions& o, const std::string& key, const std::vector<std::string>& values) {
  const auto each = [&](auto& out, auto get) {
    out.clear();
    for (const auto& t : values) out.push_back(get(setting_value(key, t)));
  };
  // Names through their parsers: a norm must be registered, a placement known.
  if (key == "placement") each(o.placements, [](const nlohmann::json& v) { return nn::to_string(nn::parse_placement(v.get<std::string>())); });
  else if (key == "norm") each(o.norms, [](const nlohmann::json& v) { return std::string(nn::NormKind::parse(v.get<std::string>()).name()); });
  else if (key == "layers") each(o.layers, [](const nlohmann::json& v) { return v.get<int64_t>(); });
  else if (key == "warmup") each(o.warmups, [](const nlohmann::json& v) { return v.get<int64_t>(); });
  else if (key == "lr") each(o.lrs, [](const nlohmann::json& v) { return v.get<double>(); });
  else if (key == "seed") each(o.seeds, [](const nlohmann::json& v) { return v.get<uint64_t>(); });
  else {
    check(!values.empty(), "--", key, " needs at least one value");
    auto it = std::find_if(o.axes.begin(), o.axes.end(), [&](const auto& a) { return a.first == key; });
    nlohmann::json j = lm::to_json(o.base);
    if (!contains(values, setting_text(j[key]))) {  // the first becomes the base
      j[key] = setting_value(key, values[0]);
      const auto threads = o.base.threads;
      o.base = lm::train_config_from_json(j);
      o.base.threads = threads;
    }
    if (values.size() == 1) {  // one value is not an axis: it is the base
      if (it != o.axes.end()) o.axes.erase(it);
      return;
    }
    if (it == o.axes.end()) {
      o.axes.emplace_back(key, values);
      // --help order, so that ids and tables do not depend on the order flags were given in
      const auto rank = [](const std::string& k) {
        return std::find(extra_axis_keys().begin(), extra_axis_keys().end(), k) - extra_axis_keys().begin();
      };
      std::stable_sort(o.axes.begin(), o.axes.end(), [&](const auto& a, const auto& b) { return rank(a.first) < rank(b.first); });
    } else {
      it->second = values;
    }
  }
}

namespace {

std::vector<std::string> axis_values(const SweepOptions& o, const std::string& key) {
  for (const auto& [k, v] : all_axes(o))
    if (k == key) return v;
  return {setting_text(lm::to_json(o.base)[key])};  // not an axis: its one value
}

}  // namespace

std::set<std::string> every_setting() {
  std::set<std::string> keys;
  const nlohmann::json train = lm::to_json(lm::TrainConfig{}), sweep = sweep_level(SweepOptions{});  // named: items() would dangle
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
    return exact_double(d);
  }
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

nlohmann::json setting_value(const std::string& key, const std::string& text) {
  const nlohmann::json defaults = lm::to_json(lm::TrainConfig{});
  check(defaults.contains(key), "unknown setting '", key.substr(0, 64), "'");
  const std::string shown = "'" + text.substr(0, 64) + (text.size() > 64 ? "...'" : "'");
  const bool safe = !text.empty() && text.size() <= 64 && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '+' || c == '-';
  });
  check(safe, "--", key, " ", shown, ": a swept value must be 1 to 64 of [A-Za-z0-9.+-]");
  const nlohmann::json& like = defaults[key];
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
    return is_unsigned ? nlohmann::json(u) : nlohmann::json(i);
  }
  if (like.is_number()) {
    double d = 0;
    const char* end = text.data() + text.size();
    const auto r = std::from_chars(text.data(), end, d);
    check(r.ec == std::errc() && r.ptr == end && std::isfinite(d), "--", key, " ", shown, ": must be a finite number");
    return d;
  }
  return text;
}

std::map<std::string, std::string> base_values(const SweepOptions& o) {
  const nlohmann::json base = lm::to_json(o.base);
  std::map<std::string, std::string> out;
  for (const auto& key : extra_axis_keys()) out[key] = setting_text(base[key]);
  return out;
}

std::string grid_shape(const SweepOptions& o) {
  static const std::map<std::string, std::string> plural = {
      {"placement", "placements"}, {"layers", "layers"}, {"warmup", "warmups"}, {"lr", "lrs"}, {"seed", "seeds"}, {"norm", "norms"}};
  std::string s;
  for (const auto& [key, values] : all_axes(o)) {
    const bool core = plural.count(key);
    if (core && values.size() == 1 && key != "norm" && key != "lr" && key != "seed") continue;
    const std::string name = core ? (values.size() == 1 ? key : plural.at(key)) : key;
    s += (s.empty() ? "" : " x ") + std::to_string(values.size()) + " " + name;
  }
  return s;
}

std::string reproduce_command(const SweepOptions& o, const SweepOptions& defaults) {
  // Every value shell-quoted: a path like "my data $(touch X).txt" pastes as that path, not a command.
  using text::shell_quote;
  std::string cmd = "compare_norms";
  for (const auto& [key, values] : all_axes(o)) {
    cmd += " --" + key;
    for (const auto& v : values) cmd += " " + shell_quote(v);
  }
  const nlohmann::json train = lm::to_json(o.base), was = lm::to_json(defaults.base);
  for (const auto& [key, value] : train.items()) {
    if (!contains(kCoreAxes, key) && !has_axis(o, key) && !contains(bookkeeping(), key) && value != was[key])
      cmd += " --" + key + " " + shell_quote(setting_text(value));
  }
  const nlohmann::json sweep = sweep_level(o), sweep_was = sweep_level(defaults);
  for (const auto& [key, value] : sweep.items())
    if (value != sweep_was[key]) cmd += " --" + key + " " + shell_quote(setting_text(value));
  return cmd + " --out " + shell_quote(o.out);
}

nlohmann::json grid_json(const SweepOptions& o) {
  nlohmann::json train = lm::to_json(o.base);
  for (const auto& k : kCoreAxes) train.erase(k);
  for (const auto& k : bookkeeping()) train.erase(k);
  nlohmann::json axes = nlohmann::json::object();
  for (const auto& [key, values] : all_axes(o)) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& t : values) list.push_back(setting_value(key, t));
    axes[key] = list;
  }
  nlohmann::json grid = {{"format", 2}, {"train", train}, {"axes", axes}, {"sweep", sweep_level(o)}};
  // Which runs each recipe of the grid is for (lm/recipes.h), so that readers of the folder (the
  // plots) name it beside the groups it applied to, as the report does.
  nlohmann::json targets = nlohmann::json::object();
  for (const auto& name : axis_values(o, "recipe"))
    for (const lm::Recipe* r : lm::recipes_in(name)) targets[r->name] = {{r->target_key, r->target_value}};
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
  read_sweep_level(v2 ? j["sweep"] : j, g, path);
  for (const char* key : {"min-lr-ratio", "divergence-factor", "divergence-patience", "spike-factor", "evals"})
    if (!v2) train.erase(key);
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
  if (v2) {
    for (const auto& [key, values] : j["axes"].items()) {
      check(is_axis(key), path, ": '", key.substr(0, 64), "' cannot be an axis");
      check(values.is_array() && !values.empty() && values.size() <= 4096, path, ": axis '", key,
            "' must be a list of 1 to 4096 values");
      std::vector<std::string> texts;
      for (const auto& v : values) {
        try {
          texts.push_back(setting_text(setting_value(key, setting_text(v))));
        } catch (const Error& e) {
          throw Error(cat(path, ": axis ", e.what()));
        }
      }
      set_axis(g, key, texts);
    }
  } else {  // format 1: the core axes are the values the folder's records hold
    std::map<std::string, std::set<std::string>> seen;
    std::set<double> lrs;
    std::set<uint64_t> seeds;
    std::set<int64_t> layers, warmups;
    std::vector<std::string> norms, placements;
    for (const auto& r : recorded) {
      if (std::find(norms.begin(), norms.end(), r.spec.norm) == norms.end()) norms.push_back(r.spec.norm);
      if (std::find(placements.begin(), placements.end(), r.spec.placement) == placements.end())
        placements.push_back(r.spec.placement);
      lrs.insert(r.spec.lr), seeds.insert(r.spec.seed), layers.insert(r.spec.layers), warmups.insert(r.spec.warmup);
    }
    if (!recorded.empty()) {
      g.norms = norms, g.placements = placements;
      g.lrs.assign(lrs.begin(), lrs.end()), g.seeds.assign(seeds.begin(), seeds.end());
      g.layers.assign(layers.begin(), layers.end()), g.warmups.assign(warmups.begin(), warmups.end());
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
  const nlohmann::json stored_sweep = sweep_level(g), asked_sweep = sweep_level(o);
  for (const auto& [key, value] : stored_sweep.items())
    if (given.count(key)) refuse_change(key, value, asked_sweep[key]);
  // Axes grow: the stored values, then this command's new ones.
  for (const auto& [key, asked] : all_axes(o)) {
    if (!given.count(key)) continue;
    std::vector<std::string> values = axis_values(g, key);
    for (const auto& t : asked)
      if (!contains(values, t)) values.push_back(t);
    set_axis(g, key, values);
  }
  // A setting given with one value (so held in o.base, not in o.axes) that differs from the
  // stored one also grows an axis.
  for (const auto& key : extra_axis_keys()) {
    if (!given.count(key) || has_axis(o, key)) continue;
    std::vector<std::string> values = axis_values(g, key);
    const std::string t = setting_text(asked_train[key]);
    if (!contains(values, t)) values.push_back(t);
    set_axis(g, key, values);
  }
  g.jobs = o.jobs;
  return g;
}

}  // namespace tapegrad::lab
