#include "tapegrad/lab/sweep.h"

#include "tapegrad/lab/grid.h"

#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "tapegrad/io/file.h"
#include "tapegrad/io/json.h"
#include "tapegrad/io/sha256.h"
#include "tapegrad/lm/recipes.h"
#include "tapegrad/lm/run_lock.h"
#include "tapegrad/lm/run_log.h"
#include "tapegrad/lm/run.h"
#include "tapegrad/lm/settings.h"
#include "tapegrad/lm/sharpness.h"
#include "tapegrad/lm/usage_error.h"
#include "tapegrad/threads.h"

namespace tapegrad::lab {

namespace fs = std::filesystem;
using lm::StepResult;
using lm::StepStats;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string num(double v) {
  if (std::isnan(v)) return "nan";
  char b[32];
  std::snprintf(b, sizeof b, "%.7g", v);
  return b;
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) out.push_back(field);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + v[i];
  return s;
}

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
    "min_log_z_mean", "min_log_z", "peak_batch_sharpness_ratio", "settings"});

namespace {
// runs.csv files written before the sharpness columns existed still read (as not measured).
constexpr size_t kColumnsBeforeSharpness = 24;
const std::vector<std::string> kSharpnessFields = {"sharpness",         "sharpness_threshold", "precond_sharpness",
                                                   "precond_threshold", "batch_sharpness",     "batch_lambda_max"};
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
  if (sharpness) c.insert(c.end(), kSharpnessFields.begin(), kSharpnessFields.end());
  for (int64_t i = 0; i < max_layers; ++i)
    for (const auto& f : kLayerFields) c.push_back(f + "_" + std::to_string(i));
  return c;
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

std::vector<std::string> sweep_warnings(const SweepOptions& o) {
  const std::vector<RunSpec> specs = expand(o);
  std::vector<std::pair<std::string, std::vector<std::string>>> seen;  // message -> the runs' settings
  for (const RunSpec& spec : specs)
    for (const std::string& w : run_config(o, spec, 1).warnings()) {
      auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& x) { return x.first == w; });
      if (it == seen.end()) it = seen.insert(seen.end(), {w, {}});
      it->second.push_back(spec.settings_text());
    }
  // A recipe no run of the sweep is a target of: no run is on it, which the command does not say.
  for (const auto& name : axis_values(o, "recipe")) {
    const std::vector<const lm::Recipe*> in = lm::recipes_in(name.get<std::string>());
    if (in.empty()) continue;
    bool targeted = false;
    for (const RunSpec& spec : specs) {
      const lm::TrainConfig c = run_config(o, spec, 1);
      for (const lm::Recipe* r : in) targeted = targeted || (c.recipe == name && lm::recipe_targets(*r, c));
    }
    std::string targets;
    for (const lm::Recipe* r : in) targets += cat(targets.empty() ? "" : ", ", r->name, " for {", r->target_key, "} ", r->target_value);
    if (!targeted)
      seen.push_back({cat("{recipe} ", name.get<std::string>(), " (", targets, "): no run of this sweep is a target, so no run "
                          "is on the recipe"), {}});
  }
  std::vector<std::string> out;
  for (const auto& [message, runs] : seen) {
    std::set<std::string> where(runs.begin(), runs.end());
    where.erase("");
    std::string in;
    for (const std::string& w : where) in += (in.empty() ? "" : "; ") + w;
    out.push_back(runs.size() == specs.size() || in.empty() ? message : cat(message, " (in the runs with ", in, ")"));
  }
  return out;
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

namespace {
// The first cells of a runs.csv or curve row: run_id and the identity settings, as the id writes
// them (every digit a learning rate needs), so that reading the row back gives the same id.
std::string identity_cells(const RunSpec& spec) {
  std::vector<std::string> cells{spec.id()};
  for (const IdentityPart& p : run_identity()) cells.push_back(spec.text(p.key));
  return join(cells);
}
}  // namespace

std::optional<RunRecord> run_one(const SweepOptions& o, const RunSpec& spec,
                                 std::shared_ptr<const text::Tokenizer> tokenizer,
                                 std::shared_ptr<const lm::TokenData> data, int threads, std::string& curve,
                                 const std::function<bool()>& stop, RunTiming* timing) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto seconds_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  RunTiming time;
  const lm::TrainConfig c = run_config(o, spec, threads);
  lm::Trainer trainer(c, std::move(tokenizer), std::move(data));
  time.setup_s = seconds_since(t0);
  lm::DivergenceDetector detector(
      {.factor = o.divergence_factor, .patience = o.divergence_patience, .spike_factor = o.spike_factor}, c.warmup);

  RunRecord rec;
  rec.spec = spec;
  rec.steps = c.steps;
  rec.final_train_loss = rec.final_val_loss = kNaN;
  rec.min_train_loss = rec.min_val_loss = std::numeric_limits<double>::infinity();
  double ms = 0;
  const std::string prefix = identity_cells(spec);
  lm::RunHooks hooks;
  hooks.detector = &detector;
  hooks.stop_requested = stop;
  hooks.on_step = [&](const lm::StepReport& report) {
    const auto h0 = std::chrono::steady_clock::now();
    const StepResult& r = report.result;
    const StepStats& s = *report.stats;
    time.steps_s += r.step_ms / 1e3, time.instrument_s += r.instrument_ms / 1e3;
    time.eval_s += report.eval_ms / 1e3, time.sharpness_s += report.sharpness_ms / 1e3;
    if (r.step == 1) rec.initial_loss = r.loss;
    else ms += r.step_ms;
    rec.steps_done = r.step;
    for (const auto& l : s.layers) {
      if (std::isfinite(l.residual_rms)) rec.peak_residual_rms = std::max(rec.peak_residual_rms, l.residual_rms);
      if (std::isfinite(l.attention_logit)) rec.peak_attention_logit = std::max(rec.peak_attention_logit, l.attention_logit);
    }
    if (std::isfinite(s.final_residual_rms)) rec.peak_residual_rms = std::max(rec.peak_residual_rms, s.final_residual_rms);
    if (std::isfinite(s.output_logit_max) && !(s.output_logit_max <= rec.peak_output_logit)) rec.peak_output_logit = s.output_logit_max;
    rec.final_residual_rms = s.final_residual_rms;
    if (std::isfinite(r.log_z_mean) && !(r.log_z_mean >= rec.min_log_z_mean)) rec.min_log_z_mean = r.log_z_mean;
    if (std::isfinite(r.log_z_min) && !(r.log_z_min >= rec.min_log_z)) rec.min_log_z = r.log_z_min;

    double val = kNaN, train = kNaN;
    if (const auto& e = report.eval) {
      val = e->val_loss, train = e->train_loss;
      rec.final_val_loss = val, rec.final_train_loss = train;
      rec.min_val_loss = std::min(rec.min_val_loss, val), rec.min_train_loss = std::min(rec.min_train_loss, train);
    }
    std::vector<std::string> row{prefix,         std::to_string(r.step), num(r.loss),        num(r.lr),
                                 num(r.grad_norm), num(s.update_ratio),  num(s.output_logit_mean),  num(s.output_logit_max),
                                 num(s.final_residual_rms), num(val),    num(train),
                                 num(r.z_loss), num(r.log_z_mean), num(r.log_z_min)};
    if (c.sharpness_every > 0) {
      lm::Sharpness h;
      h.value = h.threshold = h.preconditioned = h.preconditioned_threshold = h.batch_sharpness = h.batch_lambda_max = kNaN;
      if (report.sharpness) {
        h = *report.sharpness;
        const double ratio = lm::edge_ratio(h);
        if (std::isnan(rec.peak_sharpness_ratio) || ratio > rec.peak_sharpness_ratio) rec.peak_sharpness_ratio = ratio;
        if (ratio >= 1 && rec.sharpness_cross_step == 0) rec.sharpness_cross_step = r.step;
        const double batch_ratio = h.batch_sharpness / h.threshold;
        if (std::isfinite(batch_ratio) && !(batch_ratio <= rec.peak_batch_sharpness_ratio)) rec.peak_batch_sharpness_ratio = batch_ratio;
      }
      for (double v : {h.value, h.threshold, h.preconditioned, h.preconditioned_threshold, h.batch_sharpness, h.batch_lambda_max})
        row.push_back(num(v));
    }
    for (const auto& l : s.layers)
      for (double v : {l.residual_rms, l.norm_out_rms, l.attention_logit, l.grad_norm, l.update_ratio}) row.push_back(num(v));
    curve += join(row) + "\n";
    time.record_s += seconds_since(h0);
  };
  const lm::RunOutcome outcome = lm::run(trainer, hooks);
  if (outcome.end == lm::RunEnd::kStopRequested) return std::nullopt;
  if (const auto& d = outcome.divergence) {
    rec.diverged = true;
    rec.divergence_step = d->step;
    rec.divergence_cause = d->cause;
    rec.divergence_quantity = d->quantity;
    rec.final_val_loss = rec.final_train_loss = kNaN;
  }
  rec.spikes = detector.spikes();
  if (!std::isfinite(rec.min_val_loss)) rec.min_val_loss = kNaN;
  if (!std::isfinite(rec.min_train_loss)) rec.min_train_loss = kNaN;
  rec.step_ms = rec.steps_done > 1 ? ms / static_cast<double>(rec.steps_done - 1) : kNaN;
  rec.tokens_per_s = static_cast<double>(c.batch * c.ctx) / (rec.step_ms / 1000.0);
  rec.wall_s = seconds_since(t0);
  if (timing) *timing = time;
  return rec;
}

std::string csv_row(const RunRecord& r) {
  const RunSpec& s = r.spec;
  return join({identity_cells(s), std::to_string(r.steps), std::to_string(r.steps_done), num(r.initial_loss),
               num(r.final_train_loss), num(r.min_train_loss), num(r.final_val_loss), num(r.min_val_loss),
               r.diverged ? "1" : "0", std::to_string(r.divergence_step), r.divergence_cause, r.divergence_quantity,
               num(r.step_ms), num(r.tokens_per_s), num(r.peak_residual_rms), num(r.final_residual_rms),
               num(r.peak_attention_logit), num(r.wall_s), num(r.peak_sharpness_ratio),
               std::to_string(r.sharpness_cross_step), std::to_string(r.spikes), num(r.peak_output_logit),
               num(r.min_log_z_mean), num(r.min_log_z), num(r.peak_batch_sharpness_ratio), s.settings_text(";")});
}

void write_runs(const std::string& path, const std::vector<RunRecord>& runs) {
  std::string s = join(kRunColumns) + "\n";
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

namespace {
// j[key] as text, or "" when it is absent or not a string (files are read as untrusted).
std::string text_field(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}
}  // namespace

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
  std::vector<std::string> header = split(line);
  for (std::string& name : header) name = current_column(name);
  // Columns are found by name: files written by earlier versions lack the later columns (they
  // read as unmeasured), hold them in another order or under their old names; every name must
  // be one of kRunColumns.
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < header.size(); ++i) {
    check(std::find(kRunColumns.begin(), kRunColumns.end(), header[i]) != kRunColumns.end(), path, ": unknown column '",
          header[i].substr(0, 40), "' in the header (columns: ", join(kRunColumns), ")");
    check(at.emplace(header[i], i).second, path, ": column '", header[i], "' appears twice in the header");
  }
  for (size_t i = 0; i < kColumnsBeforeSharpness; ++i)
    check(at.count(kRunColumns[i]), path, ": the header lacks column '", kRunColumns[i], "' (expected ", join(kRunColumns), ")");
  std::vector<RunRecord> runs;
  for (int n = 2; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    const auto f = split(line);
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

namespace {
// The sweep's text, tokenizer and token data: every run trains on these.
struct SweepData {
  std::shared_ptr<const text::Tokenizer> tokenizer;
  std::shared_ptr<const lm::TokenData> data;
};
SweepData load_sweep_data(const SweepOptions& o, const std::string& text) {
  const std::string what = o.base.data.empty() ? std::string("embedded corpus") : o.base.data;
  std::shared_ptr<const text::Tokenizer> tokenizer = lm::build_tokenizer(o.base, text, what);
  return {tokenizer, lm::make_token_data(o.base, *tokenizer, text)};
}
SweepData load_sweep_data(const SweepOptions& o) { return load_sweep_data(o, lm::load_text(o.base.data)); }

// The text's identity, as sweep.json and every run's proof hold it.
nlohmann::json data_identity(const SweepOptions& o, const std::string& text) {
  return {{"source", o.base.data.empty() ? std::string("embedded corpus") : o.base.data},
          {"bytes", text.size()},
          {"sha256", io::sha256_hex(text)}};
}
std::string describe_data(const nlohmann::json& d) {
  const bool sized = d.is_object() && d.contains("bytes") && d["bytes"].is_number_unsigned();
  return cat(text_field(d, "source"), " (", sized ? d["bytes"].get<uint64_t>() : 0, " bytes, sha256 ",
             text_field(d, "sha256").substr(0, 16), "...)");
}

// What a run trained with, as its proof holds it: the run's settings as train_lm's config.json,
// less the thread count (a run's bits depend on it, its comparability does not) and the
// evaluation interval (sweep.json's "evals", one per folder, sets it).
nlohmann::json proof_config(const SweepOptions& o, const RunSpec& spec) {
  nlohmann::json c = lm::to_json(run_config(o, spec, 1));
  c.erase("threads");
  c.erase("eval-every");
  return c;
}

std::string proof_path(const std::string& out, const std::string& id) { return out + "/records/" + id + ".json"; }

// records/<id>.json, written after the run's curve and record: what it trained with and on, and the
// SHA-256 of both files, so neither can change (or go missing) without the sweep noticing.
void write_proof(const SweepOptions& o, const RunSpec& spec, const nlohmann::json& data, const std::string& record,
                 const std::string& curve) {
  const nlohmann::json proof = {{"format", 1},
                                {"config", proof_config(o, spec)},
                                {"data", data},
                                {"record_sha256", io::sha256_hex(record)},
                                {"curve_sha256", io::sha256_hex(curve)}};
  io::write_file_atomic(proof_path(o.out, spec.id()), proof.dump(1) + "\n");
}

// Whether the folder's runs carry proofs: its sweep.json says so (every writer of proofs marks it),
// or a proof is there. In such a folder a run without a proof is unproven, never adopted.
bool folder_has_proofs(const std::string& out) {
  std::error_code ec;
  const std::string grid_path = out + "/sweep.json";
  if (fs::exists(grid_path, ec)) {
    const nlohmann::json g = io::parse_json(io::read_file(grid_path, kMaxGridBytes), grid_path);
    if (g.is_object() && g.contains("run_proofs")) return true;
  }
  if (fs::is_directory(out + "/records", ec))
    for (const auto& entry : fs::directory_iterator(out + "/records", ec))
      if (entry.path().extension() == ".json") return true;
  return false;
}

// Whether the recorded run `spec` counts as done: its record, curve and proof are there and agree.
// Not done (trained again), with the reason in `why`: a missing or changed curve or record, or no
// proof in a folder whose runs carry proofs (`adopt_unproven` false: a run killed before its proof
// was written, or files copied in from elsewhere). An Error: the run trained on other data, or
// with other settings than the grid now gives (an edited sweep.json) — reporting it beside the
// others would compare unlike runs. Only in a folder written before proofs existed
// (`adopt_unproven`) is a run without one taken, once its record agrees with what the grid gives
// it (its id, steps, and a step count it could have reached); `legacy` says so.
bool run_is_done(const SweepOptions& o, const RunSpec& spec, const nlohmann::json& data, bool adopt_unproven,
                 std::string& why, bool& legacy) {
  const std::string id = spec.id(), record_path = o.out + "/records/" + id + ".csv",
                    curve_path = o.out + "/curves/" + id + ".csv", proof_file = proof_path(o.out, id);
  std::error_code ec;
  legacy = false;
  for (const std::string& path : {record_path, curve_path, proof_file})
    check(!fs::is_symlink(path, ec), path, ": a link; a sweep reads and writes only files of its own (remove the link)");
  if (!fs::is_regular_file(record_path, ec)) return why = "records/" + id + ".csv is missing", false;
  if (!fs::is_regular_file(curve_path, ec)) return why = "curves/" + id + ".csv is missing", false;
  if (!fs::exists(proof_file, ec)) {
    if (!adopt_unproven) return why = "records/" + id + ".json (its proof) is missing", false;
    const std::vector<RunRecord> rows = read_runs(record_path);
    const int64_t steps = run_config(o, spec, 1).steps;
    if (rows.size() != 1 || rows[0].spec.id() != id)
      return why = "records/" + id + ".csv does not hold that run's one row", false;
    const RunRecord& r = rows[0];
    if (r.steps != steps || r.steps_done < 1 || r.steps_done > steps || (!r.diverged && r.steps_done != steps))
      return why = cat("records/", id, ".csv says ", r.steps_done, " of ", r.steps, " steps, the grid gives ", steps), false;
    return legacy = true, true;
  }
  const RunProof proof = parse_proof(io::read_file(proof_file, kMaxRecordBytes), proof_file);
  if (proof.record_sha256 != io::sha256_hex(io::read_file(record_path, kMaxRecordBytes)))
    return why = "records/" + id + ".csv changed after its run wrote it", false;
  if (proof.curve_sha256 != io::sha256_hex(io::read_file(curve_path, kMaxCurveBytes)))
    return why = "curves/" + id + ".csv changed after its run wrote it", false;
  check(text_field(proof.data, "sha256") == text_field(data, "sha256"), o.out,
        ": its runs trained on ", describe_data(proof.data), ", this sweep's data is ", describe_data(data),
        ": a folder's runs share their data, so give the same text, or another --out (", proof_file, ")");
  const nlohmann::json now = proof_config(o, spec);
  // A setting the proof lacks was added after the run trained: it ran with its default (a new
  // setting's default keeps the behaviour the code had before it).
  static const nlohmann::json defaults = lm::to_json(lm::TrainConfig{});
  for (const auto& [key, value] : now.items()) {
    const nlohmann::json was =
        proof.config.contains(key) ? proof.config[key] : defaults.contains(key) ? defaults[key] : nlohmann::json();
    check(was == value, proof_file, ": run ", id, " trained with ", key, " = ", io::json_excerpt(was),
          ", but the grid (", o.out, "/sweep.json) now gives it ", io::json_excerpt(value),
          ": sweep.json was changed after the runs trained; restore it, or start another --out");
  }
  return true;
}

// A continuation: the folder's text (sweep.json's "data") must be this sweep's.
void check_stored_data(const SweepOptions& o, const nlohmann::json& data) {
  const std::string grid_path = o.out + "/sweep.json";
  std::error_code ec;
  if (!fs::exists(grid_path, ec)) return;
  const nlohmann::json stored = io::parse_json(io::read_file(grid_path, kMaxGridBytes), grid_path);
  if (stored.is_object() && stored.contains("data") && stored["data"].is_object())
    check(text_field(stored["data"], "sha256") == text_field(data, "sha256"), o.out, ": its runs trained on ",
          describe_data(stored["data"]), ", this sweep's data is ", describe_data(data),
          ": a folder's runs share their data, so give the same text, or another --out (", grid_path, ")");
}

}  // namespace

void verify_sweep_folder(const SweepOptions& o) {
  io::check_path(o.out, "the sweep's folder (out)");
  const nlohmann::json data = data_identity(o, lm::load_text(o.base.data));
  check_stored_data(o, data);
  const std::map<std::string, RunRecord> all = recorded_runs(o.out);
  const bool proven = folder_has_proofs(o.out);
  for (const RunSpec& spec : expand(o)) {
    std::string why;
    bool legacy = false;
    if (all.count(spec.id())) run_is_done(o, spec, data, !proven, why, legacy);
  }
}

double sweep_unigram_loss(const SweepOptions& o) {
  const SweepData d = load_sweep_data(o);
  return lm::unigram_loss(d.data->train, d.data->val, d.tokenizer->vocab_size());
}

namespace {

std::function<void(const std::string&, const std::string&)>& write_boundary_hook() {
  static std::function<void(const std::string&, const std::string&)> hook;
  return hook;
}
void written(const std::string& file, const std::string& run_id) {
  if (const auto& hook = write_boundary_hook()) hook(file, run_id);
}

void write_runs_csv(const std::string& out, const std::map<std::string, RunRecord>& all) {
  std::vector<RunRecord> rows;
  for (const auto& [id, r] : all) rows.push_back(r);
  write_runs(out + "/runs.csv", rows);
}

}  // namespace

void set_write_boundary_hook(std::function<void(const std::string&, const std::string&)> hook) {
  write_boundary_hook() = std::move(hook);
}

std::vector<RunRecord> run_sweep(const SweepOptions& asked,
                                 const std::function<void(const RunRecord&, bool, int, int)>& on_run,
                                 const lm::Communicator* comm, SweepTiming* timing, const std::function<void()>& on_tail) {
  const auto t_start = std::chrono::steady_clock::now();
  const auto seconds_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  SweepTiming time;
  const int ranks = comm ? comm->size() : 1, rank = comm ? comm->rank() : 0;
  io::check_path(asked.out, "the sweep's folder (out)");
  const SweepOptions o = resolve_sweep(asked, every_setting());
  const std::string text = lm::load_text(o.base.data);
  const nlohmann::json data = data_identity(o, text);
  check_stored_data(o, data);
  const std::string grid_path = o.out + "/sweep.json";
  const bool adopt_unproven = !folder_has_proofs(o.out);  // read before sweep.json is rewritten with the mark
  if (comm) comm->barrier();                                 // by every rank
  std::error_code ec;
  std::optional<lm::RunLock> folder_lock;  // one writer per sweep folder (rank 0 writes the shared files)
  if (rank == 0) {
    folder_lock.emplace(o.out);
    io::ensure_own_directory(o.out + "/curves");
    io::ensure_own_directory(o.out + "/records");
    nlohmann::json g = grid_json(o);
    g["data"] = data;
    const std::string grid = g.dump(2) + "\n";
    if (!fs::exists(grid_path, ec) || io::read_file(grid_path, kMaxGridBytes) != grid) io::write_file_atomic(grid_path, grid);
  }
  if (comm) comm->barrier();
  std::map<std::string, RunRecord> all = recorded_runs(o.out);

  const std::vector<RunSpec> specs = expand(o);
  std::vector<size_t> todo;
  int finished = 0, legacy_runs = 0;
  const int total = static_cast<int>(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string id = specs[i].id();
    std::string why;
    bool legacy = false;
    if (all.count(id) && !run_is_done(o, specs[i], data, adopt_unproven, why, legacy)) {
      if (rank == 0) std::fprintf(stderr, "%s: %s: training run %s again\n", o.out.c_str(), why.c_str(), id.c_str());
      all.erase(id);
    }
    if (!all.count(id)) {
      todo.push_back(i);
      continue;
    }
    if (legacy && rank == 0) {  // hashed now, as it is: from here on a change to it is noticed
      write_proof(o, specs[i], data, io::read_file(o.out + "/records/" + id + ".csv", kMaxRecordBytes),
                  io::read_file(o.out + "/curves/" + id + ".csv", kMaxCurveBytes));
      ++legacy_runs;
    }
    if (rank == 0) on_run(all[id], true, ++finished, total);
  }
  if (legacy_runs > 0)
    std::fprintf(stderr, "%s: %d run(s) recorded before runs carried proofs (records/<id>.json) were taken as they "
                 "are and hashed now\n", o.out.c_str(), legacy_runs);
  // Runs not yet recorded are dealt round-robin over the ranks; each rank reports its own.
  std::vector<size_t> mine;
  for (size_t k = 0; k < todo.size(); ++k)
    if (static_cast<int>(k % ranks) == rank) mine.push_back(todo[k]);

  std::chrono::steady_clock::time_point t_end = std::chrono::steady_clock::now();
  if (!mine.empty()) {
    const SweepData shared = load_sweep_data(o, text);  // named, not a structured binding: clang 14 cannot capture those
    const int per_rank_cores = std::max(1, (o.base.threads > 0 ? o.base.threads : num_cores()) /
                                               (comm ? comm->local_size() : 1));
    const int jobs = std::max(1, std::min<int>(o.jobs, static_cast<int>(mine.size())));
    const int threads = std::max(1, per_rank_cores / jobs);
    time.jobs = jobs;
    time.prepare_s = seconds_since(t_start);
    std::atomic<size_t> next{0};
    std::atomic<int> training{jobs};  // workers still in their loop
    std::mutex mu;
    std::exception_ptr failure;
    const auto stop = [] { return lm::stop_signal() != 0; };
    auto worker = [&] {
      try {
        for (size_t k; (k = next++) < mine.size() && !stop();) {
          const RunSpec& spec = specs[mine[k]];
          std::string curve;
          RunTiming run_time;
          const auto rec = run_one(o, spec, shared.tokenizer, shared.data, threads, curve, stop, &run_time);
          if (!rec) break;  // stopped
          const auto w0 = std::chrono::steady_clock::now();
          // The curve, then the record, then the proof of both: a run is done once its proof is written.
          const std::string curve_file = join(curve_columns(spec.get<int64_t>("layers"), o.base.sharpness_every > 0)) + "\n" + curve;
          const std::string record_file = join(kRunColumns) + "\n" + csv_row(*rec) + "\n";
          io::write_file_atomic(o.out + "/curves/" + spec.id() + ".csv", curve_file);
          written("curve", spec.id());
          io::write_file_atomic(o.out + "/records/" + spec.id() + ".csv", record_file);
          written("record", spec.id());
          write_proof(o, spec, data, record_file, curve_file);
          written("proof", spec.id());
          std::lock_guard<std::mutex> lock(mu);
          all[spec.id()] = *rec;
          if (ranks == 1) write_runs_csv(o.out, all);  // kept current; under MPI rank 0 assembles at the end
          run_time.record_s += seconds_since(w0);
          time.runs += run_time;
          ++time.trained;
          on_run(*rec, false, ++finished, total);
        }
        // The first worker out of runs while another still trains: a core is free from here on.
        if (const int left = --training; left == jobs - 1 && left > 0 && on_tail && !stop()) on_tail();
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failure) failure = std::current_exception();
      }
    };
    std::vector<std::thread> pool;
    for (int j = 1; j < jobs; ++j) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
    if (failure) std::rethrow_exception(failure);
    t_end = std::chrono::steady_clock::now();
  } else {
    time.prepare_s = seconds_since(t_start);
  }
  if (comm) comm->barrier();  // every rank's runs are recorded
  if (rank != 0) {
    if (timing) *timing = time;
    return {};
  }

  all = recorded_runs(o.out);
  // runs.csv, curves.csv and the report hold the grid's runs only, each checked against its proof
  // (a rank's runs were written after this rank's check above).
  std::map<std::string, const RunSpec*> by_id;
  for (const auto& spec : specs) by_id[spec.id()] = &spec;
  for (auto it = all.begin(); it != all.end();) {
    const auto spec = by_id.find(it->first);
    std::string why;
    bool legacy = false;
    if (spec == by_id.end() || !run_is_done(o, *spec->second, data, adopt_unproven, why, legacy)) it = all.erase(it);
    else ++it;
  }
  write_runs_csv(o.out, all);
  // curves.csv: every recorded run's curve under the deepest run's columns. Each file's cells are
  // placed by its own header, so a curve written before a column existed leaves that column empty.
  int64_t max_layers = 0;
  for (const auto& [id, r] : all) max_layers = std::max(max_layers, r.spec.get<int64_t>("layers"));
  const std::vector<std::string> columns = curve_columns(max_layers, o.base.sharpness_every > 0);
  std::string curves = join(columns) + "\n";
  for (const auto& [id, r] : all) {
    const std::string path = o.out + "/curves/" + id + ".csv";
    std::istringstream in(io::read_file(path, kMaxCurveBytes));
    std::string line;
    std::getline(in, line);
    std::vector<std::string> header = split(line);
    for (std::string& name : header) name = current_column(name);
    std::vector<int> source(columns.size(), -1);  // column k of curves.csv is the file's column source[k]
    for (size_t k = 0; k < columns.size(); ++k)
      if (const auto it = std::find(header.begin(), header.end(), columns[k]); it != header.end())
        source[k] = static_cast<int>(it - header.begin());
    for (int n = 2; std::getline(in, line); ++n) {
      const std::vector<std::string> f = split(line);
      check(f.size() == header.size(), path, ":", n, ": ", f.size(), " fields, expected ", header.size());
      std::vector<std::string> row(columns.size());
      for (size_t k = 0; k < columns.size(); ++k)
        if (source[k] >= 0) row[k] = f[static_cast<size_t>(source[k])];
      curves += join(row) + "\n";
    }
  }
  io::write_file_atomic(o.out + "/curves.csv", curves);

  std::vector<RunRecord> sweep;  // this sweep's runs, in sweep order
  for (const auto& s : specs)
    if (all.count(s.id())) sweep.push_back(all[s.id()]);
  time.gather_s = seconds_since(t_end);
  if (timing) *timing = time;
  return sweep;
}

void name_given(SweepOptions& o, const std::set<std::string>& named) {
  for (const std::string& key : named)
    if (lm::find_setting(key)) o.given.insert(key);
}

SweepOptions default_sweep(int local_ranks) {
  SweepOptions o;
  o.base.dim = 64;
  o.base.steps = 300;
  o.base.warmup = 30;
  o.base.eval_iters = 10;
  // The report reads the validation loss alone; the training split's estimate would double the
  // evaluations' cost (the per-step training loss is in curves.csv either way).
  o.base.eval_train = false;
  o.base.batch = 8;
  o.base.recipe = "dyt-paper";  // --recipe none runs DyT with the settings as given
  set_axis(o, "lr", std::vector<nlohmann::json>{1e-3, 3e-3, 1e-2, 3e-2, 1e-1});
  set_axis(o, "seed", std::vector<nlohmann::json>{1, 2});
  o.jobs = std::max(1, num_cores() / std::max(1, local_ranks));
  o.out = "runs/lab";
  return o;
}

}  // namespace tapegrad::lab
