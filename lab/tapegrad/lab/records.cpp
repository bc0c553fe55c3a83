#include "tapegrad/lab/records.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <sstream>

#include "tapegrad/io/file.h"
#include "tapegrad/io/json.h"
#include "tapegrad/lab/grid.h"
#include "tapegrad/lm/sharpness.h"

namespace tapegrad::lab {

namespace fs = std::filesystem;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

std::string csv_number(double v) {
  if (std::isnan(v)) return "nan";
  char b[32];
  std::snprintf(b, sizeof b, "%.7g", v);
  return b;
}

std::vector<std::string> csv_split(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) out.push_back(field);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

std::string csv_join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + v[i];
  return s;
}

namespace {
// run_id and the run identity's settings (run_spec.h), then these.
const std::vector<std::string> kCurveFields = {"step", "loss", "lr_now", "grad_norm", "update_ratio",
                                               "output_logit_mean", "output_logit_max", "final_residual_rms", "val_loss",
                                               "train_eval_loss", "z_loss", "log_z_mean", "log_z_min"};
const std::vector<std::string> kLayerFields = {"residual_rms", "norm_out_rms", "attention_logit", "grad_norm", "update_ratio"};

}  // namespace

namespace {
// "run_id" and the run identity's settings, then `fields`.
std::vector<std::string> identified(const std::vector<std::string>& fields) {
  std::vector<std::string> c{"run_id"};
  for (const IdentityPart& p : run_identity()) c.push_back(p.key);
  c.insert(c.end(), fields.begin(), fields.end());
  return c;
}
}  // namespace

const std::vector<std::string> kRunColumns = identified({
    "steps", "steps_done", "initial_loss",
    "final_train_loss", "min_train_loss", "final_val_loss", "min_val_loss", "diverged", "divergence_step",
    "divergence_cause", "divergence_quantity", "step_ms", "tokens_per_s", "peak_residual_rms", "final_residual_rms",
    "peak_attention_logit", "wall_s", "peak_sharpness_ratio", "sharpness_cross_step", "spikes", "peak_output_logit",
    "min_log_z_mean", "min_log_z", "peak_batch_sharpness_ratio", "min_output_logit_mean", "settings"});

namespace {
// runs.csv files written before the sharpness columns existed still read (as not measured).
constexpr size_t kColumnsBeforeSharpness = 24;
}  // namespace

std::string current_column(const std::string& name) {
  static const std::map<std::string, std::string> renamed = {
      {"depth", "layers"}, {"peak_max_logit", "peak_attention_logit"}, {"logit_mean", "output_logit_mean"},
      {"logit_max", "output_logit_max"}};
  if (const auto it = renamed.find(name); it != renamed.end()) return it->second;
  if (name.starts_with("max_logit_")) return "attention_logit_" + name.substr(10);
  return name;
}

std::vector<std::string> curve_columns(int64_t max_layers, bool sharpness) {
  std::vector<std::string> c = identified(kCurveFields);
  if (sharpness)
    for (const auto& [name, value] : lm::sharpness_values(lm::Sharpness::unmeasured())) c.push_back(name);
  for (int64_t i = 0; i < max_layers; ++i)
    for (const auto& f : kLayerFields) c.push_back(f + "_" + std::to_string(i));
  return c;
}

// The first cells of a runs.csv or curve row: run_id and the identity settings, as the id writes
// them (every digit a learning rate needs), so that reading the row back gives the same id.
std::string identity_cells(const RunSpec& spec) {
  std::vector<std::string> cells{spec.id()};
  for (const IdentityPart& p : run_identity()) cells.push_back(spec.text(p.key));
  return csv_join(cells);
}


std::string csv_row(const RunRecord& r) {
  const RunSpec& s = r.spec;
  return csv_join({identity_cells(s), std::to_string(r.steps), std::to_string(r.steps_done), csv_number(r.initial_loss),
               csv_number(r.final_train_loss), csv_number(r.min_train_loss), csv_number(r.final_val_loss), csv_number(r.min_val_loss),
               r.diverged ? "1" : "0", std::to_string(r.divergence_step), r.divergence_cause, r.divergence_quantity,
               csv_number(r.step_ms), csv_number(r.tokens_per_s), csv_number(r.peak_residual_rms), csv_number(r.final_residual_rms),
               csv_number(r.peak_attention_logit), csv_number(r.wall_s), csv_number(r.peak_sharpness_ratio),
               std::to_string(r.sharpness_cross_step), std::to_string(r.spikes), csv_number(r.peak_output_logit),
               csv_number(r.min_log_z_mean), csv_number(r.min_log_z), csv_number(r.peak_batch_sharpness_ratio),
               csv_number(r.min_output_logit_mean), s.settings_text(";")});
}

void write_runs(const std::string& path, const std::vector<RunRecord>& runs) {
  std::string s = csv_join(kRunColumns) + "\n";
  for (const auto& r : runs) s += csv_row(r) + "\n";
  io::write_file_atomic(path, s);
}

namespace {
// A cell of a records file, or an Error naming the file, line, column and value.
template <typename V>
V cell(const std::string& s, const std::string& column, const std::string& where) {
  if constexpr (std::is_floating_point_v<V>)
    if (s.empty() || s == "nan") return kNaN;
  V v{};
  const auto [end, err] = std::from_chars(s.data(), s.data() + s.size(), v);
  check(!s.empty() && err == std::errc() && end == s.data() + s.size(), where, ": column '", column, "' must be ",
        std::is_floating_point_v<V> ? "a number" : "a whole number", std::is_unsigned_v<V> ? " >= 0" : "", ", got '",
        s.substr(0, 40), "'");
  return v;
}
}  // namespace

std::vector<RunRecord> read_runs(const std::string& path) {
  if (!fs::exists(path)) return {};
  return parse_runs(io::read_file(path, path.ends_with("runs.csv") ? kMaxRunsBytes : kMaxRecordBytes), path);
}

// j[key] as text, or "" when it is absent or not a string (files are read as untrusted).
std::string text_field(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

RunProof parse_proof(const std::string& text, const std::string& path) {
  const nlohmann::json j = io::parse_json(text, path);
  const auto sha = [&](const char* key) {
    const std::string h = text_field(j, key);
    check(h.size() == 64 && h.find_first_not_of("0123456789abcdef") == std::string::npos, path, ": '", key,
          "' must be a SHA-256 in hex (delete the proof and its run's files to train the run again)");
    return h;
  };
  check(j.is_object() && j.contains("format") && j["format"].is_number_integer() && j["format"] == 1, path,
        ": not a run proof of format 1 (delete it and its run's files to train the run again)");
  for (const char* part : {"config", "data"})
    check(j.contains(part) && j[part].is_object(), path, ": '", part, "' must be an object");
  RunProof p{j["config"], j["data"], sha("record_sha256"), sha("curve_sha256")};
  check(text_field(p.data, "sha256").size() == 64, path, ": 'data' must hold the text's sha256");
  return p;
}

std::vector<RunRecord> parse_runs(const std::string& text, const std::string& path) {
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header = csv_split(line);
  for (std::string& name : header) name = current_column(name);
  // Columns are found by name: files written by earlier versions lack the later columns (they
  // read as unmeasured), hold them in another order or under their old names; every name must
  // be one of kRunColumns.
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < header.size(); ++i) {
    check(std::find(kRunColumns.begin(), kRunColumns.end(), header[i]) != kRunColumns.end(), path, ": unknown column '",
          header[i].substr(0, 40), "' in the header (columns: ", csv_join(kRunColumns), ")");
    check(at.emplace(header[i], i).second, path, ": column '", header[i], "' appears twice in the header");
  }
  for (size_t i = 0; i < kColumnsBeforeSharpness; ++i)
    check(at.count(kRunColumns[i]), path, ": the header lacks column '", kRunColumns[i], "' (expected ", csv_join(kRunColumns), ")");
  std::vector<RunRecord> runs;
  for (int n = 2; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    const auto f = csv_split(line);
    const std::string where = cat(path, ":", n);
    check(f.size() == header.size(), where, ": ", f.size(), " fields, expected ", header.size());
    const auto has = [&](const char* column) { return at.count(column) > 0; };
    const auto field = [&](const char* column) -> const std::string& { return f[at.at(column)]; };
    const auto number = [&]<typename V>(const char* column, V& into) {
      if (has(column)) into = cell<V>(field(column), column, where);
    };
    RunRecord r;
    // Values from a file become file names (curves/<run_id>.csv): each is read as its flag's value
    // (a registered norm, a whole number of layers, ...), so a row cannot point outside the folder.
    for (const IdentityPart& p : run_identity()) {
      try {
        r.spec.values[p.key] = setting_value(p.key, field(p.key.c_str()));
      } catch (const Error& e) {
        throw Error(cat(where, ": column '", p.key, "': ", e.what()));
      }
    }
    number("steps", r.steps), number("steps_done", r.steps_done), number("initial_loss", r.initial_loss);
    number("final_train_loss", r.final_train_loss), number("min_train_loss", r.min_train_loss);
    number("final_val_loss", r.final_val_loss), number("min_val_loss", r.min_val_loss);
    r.diverged = field("diverged") == "1", number("divergence_step", r.divergence_step);
    r.divergence_cause = field("divergence_cause"), r.divergence_quantity = field("divergence_quantity");
    number("step_ms", r.step_ms), number("tokens_per_s", r.tokens_per_s);
    number("peak_residual_rms", r.peak_residual_rms), number("final_residual_rms", r.final_residual_rms);
    number("peak_attention_logit", r.peak_attention_logit), number("wall_s", r.wall_s);
    number("peak_sharpness_ratio", r.peak_sharpness_ratio), number("sharpness_cross_step", r.sharpness_cross_step);
    number("spikes", r.spikes), number("peak_output_logit", r.peak_output_logit);
    number("min_log_z_mean", r.min_log_z_mean), number("min_log_z", r.min_log_z);
    number("peak_batch_sharpness_ratio", r.peak_batch_sharpness_ratio);
    number("min_output_logit_mean", r.min_output_logit_mean);
    if (has("settings") && !field("settings").empty()) {  // "dim=64;qk-norm=rmsnorm": swept settings, checked as on the command line
      std::istringstream items(field("settings"));
      for (std::string item; std::getline(items, item, ';');) {
        const size_t eq = item.find('=');
        try {
          check(eq != std::string::npos, "setting '", item.substr(0, 64), "' is not key=value");
          const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
          check(is_axis(key) && !identity_part(key), "'", key.substr(0, 64), "' is not a setting a sweep can vary");
          check(r.spec.values.emplace(key, setting_value(key, value)).second, "setting '", key, "' appears twice");
        } catch (const Error& e) {
          throw Error(cat(where, ": column 'settings': ", e.what()));
        }
      }
    }
    check(r.spec.id() == field("run_id"), where, ": run_id '", field("run_id").substr(0, 80), "' does not match its columns (", r.spec.id(), ")");
    runs.push_back(std::move(r));
  }
  return runs;
}

std::map<std::string, RunRecord> recorded_runs(const std::string& out) {
  std::map<std::string, RunRecord> all;
  for (auto& r : read_runs(out + "/runs.csv")) all[r.spec.id()] = r;
  std::error_code ec;
  for (const char* sub : {"/records", "/curves"})
    check(!fs::is_symlink(out + sub, ec), out, sub, ": a link; a sweep reads and writes only folders of its own (remove the link)");
  if (fs::is_directory(out + "/records", ec))
    for (const auto& entry : fs::directory_iterator(out + "/records"))
      if (entry.path().extension() == ".csv")
        for (auto& r : read_runs(entry.path().string())) all[r.spec.id()] = r;
  return all;
}

}  // namespace tapegrad::lab
