#include "tapegrad/lab/records.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <shared_mutex>
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

std::string to_string(ColumnType t) {
  switch (t) {
    case ColumnType::kInt: return "int";
    case ColumnType::kReal: return "real";
    case ColumnType::kBool: return "bool";
    case ColumnType::kText: return "text";
  }
  return "?";
}

namespace {
// The registries' tables (run_columns(), curve_schema()) and how often either changed, so that
// fold_step's per-thread lookup knows when to look again.
std::vector<RunColumn>& run_table();
std::vector<CurveColumn>& curve_table();
std::atomic<uint64_t> schema_generation{0};

// Sweeps hold it shared (SchemaInUse); a registration takes it alone, without waiting.
std::shared_mutex& schema_mutex() {
  static std::shared_mutex m;
  return m;
}
thread_local int schema_uses = 0;  // SchemaInUse's nesting on this thread
}  // namespace

SchemaInUse::SchemaInUse() {
  if (schema_uses++ == 0) {
    schema_mutex().lock_shared();
    holds_ = true;
  }
}

SchemaInUse::~SchemaInUse() {
  --schema_uses;
  if (holds_) schema_mutex().unlock_shared();
}

const std::vector<RunColumn>& run_columns() { return run_table(); }
const std::vector<CurveColumn>& curve_schema() { return curve_table(); }

namespace {
std::vector<RunColumn>& run_table() {
  using R = RunRecord;
  static std::vector<RunColumn> table = [] {
    std::vector<RunColumn> t{
        {"steps", &R::steps, "steps", "setting", "the run's length (--steps)"},
        {"steps_done", &R::steps_done, "steps", "count", "steps trained: fewer when the run diverged"},
        {"initial_loss", &R::initial_loss, "nats", "step 1", "the training loss of the first step"},
        {"final_train_loss", &R::final_train_loss, "nats", "last evaluation",
         "the training split's loss on --eval-iters batches (NaN without --eval-train)"},
        {"min_train_loss", &R::min_train_loss, "nats", "min over evaluations", "the training split's loss, its lowest"},
        {"final_val_loss", &R::final_val_loss, "nats", "last evaluation", "the validation loss"},
        {"min_val_loss", &R::min_val_loss, "nats", "min over evaluations", "the validation loss, its lowest"},
        {"diverged", &R::diverged, "", "any step", "the run diverged (lm/divergence.h) and stopped"},
        {"divergence_step", &R::divergence_step, "step", "first", "the step it diverged at (0: it did not)"},
        {"divergence_cause", &R::divergence_cause, "", "first", "why it counts as diverged (lm/divergence.h)"},
        {"divergence_quantity", &R::divergence_quantity, "", "first", "the quantity that crossed its limit"},
        {"step_ms", &R::step_ms, "ms", "mean over steps after the first", "wall time per training step"},
        {"tokens_per_s", &R::tokens_per_s, "tokens/s", "mean over steps after the first", "training throughput"},
        {"peak_residual_rms", &R::peak_residual_rms, "", "max over steps and layers",
         "RMS of the residual stream entering a block (or leaving the last)",
         Fold{Fold::kMax, {"residual_rms", "final_residual_rms"}}},
        {"final_residual_rms", &R::final_residual_rms, "", "last step", "RMS of the stream after the last block",
         Fold{Fold::kLast, {"final_residual_rms"}}},
        {"peak_attention_logit", &R::peak_attention_logit, "", "max over steps and layers",
         "the largest attention logit q.k / sqrt(head size)", Fold{Fold::kMax, {"attention_logit"}}},
        {"wall_s", &R::wall_s, "s", "total", "the run's wall time"},
        {"peak_sharpness_ratio", &R::peak_sharpness_ratio, "", "max over measurements",
         "the loss Hessian's top eigenvalue over its threshold (2/lr; Adam: the preconditioned one), NaN unmeasured"},
        {"sharpness_cross_step", &R::sharpness_cross_step, "step", "first measurement",
         "the first measured step where that ratio reached 1 (0: never)"},
        {"spikes", &R::spikes, "", "count", "loss spikes that recovered (lm/divergence.h)"},
        {"peak_output_logit", &R::peak_output_logit, "", "max over steps", "the largest LM-head logit",
         Fold{Fold::kMax, {"output_logit_max"}}},
        {"min_log_z_mean", &R::min_log_z_mean, "nats", "min over steps",
         "log Z (the LM head's logsumexp, what the z-loss pulls to 0), its mean over the batch's tokens",
         Fold{Fold::kMin, {"log_z_mean"}}},
        {"min_log_z", &R::min_log_z, "nats", "min over steps", "log Z, its minimum over the batch's tokens",
         Fold{Fold::kMin, {"log_z_min"}}},
        {"peak_batch_sharpness_ratio", &R::peak_batch_sharpness_ratio, "", "max over measurements",
         "the batch sharpness (mean g'Hg / g'g over fresh batches) over 2/lr, NaN unmeasured"},
        {"min_output_logit_mean", &R::min_output_logit_mean, "", "min over steps", "the mean LM-head logit",
         Fold{Fold::kMin, {"output_logit_mean"}}},
    };
    // Files written before the sharpness columns existed still read (the later ones as unmeasured).
    bool later = false;
    for (RunColumn& c : t) {
      later = later || c.name == "peak_sharpness_ratio";
      c.added_later = later;
      if (c.name == "peak_attention_logit")
        c.flag = RunColumn::Flag{.above = kAttentionLogitLimit,
                                 .name = "attention logit > 1e4",
                                 .why = "the growth Wortsman et al. 2023 find before attention-logit divergence "
                                        "(qk-layernorm prevents it)"};
      if (c.name == "min_log_z_mean")
        c.flag = RunColumn::Flag{.below = kLogZFloor,
                                 .name = "log Z < -10",
                                 .why = "the mean log Z (the LM head's logsumexp, what the z-loss pulls to 0) drifted "
                                        "very negative, as Wortsman et al. 2023 find before output-logit divergence"};
    }
    return t;
  }();
  return table;
}

std::vector<CurveColumn>& curve_table() {
  using Report = lm::StepReport;
  static std::vector<CurveColumn> table = [] {
    const auto stat = [](double lm::StepStats::*m) { return [m](const Report& r) { return r.stats ? r.stats->*m : kNaN; }; };
    const auto result = [](double lm::StepResult::*m) { return [m](const Report& r) { return r.result.*m; }; };
    std::vector<CurveColumn> t{
        {.name = "step", .unit = "step", .meaning = "the training step (1 first)", .type = ColumnType::kInt,
         .value = [](const Report& r) { return static_cast<double>(r.result.step); }},
        {.name = "loss", .unit = "nats", .meaning = "the step's training loss: the batch's mean cross-entropy",
         .value = result(&lm::StepResult::loss)},
        {.name = "lr_now", .meaning = "the step's learning rate (the schedule's)", .value = result(&lm::StepResult::lr)},
        {.name = "grad_norm", .meaning = "the global gradient norm, before clipping", .value = result(&lm::StepResult::grad_norm)},
        {.name = "update_ratio", .meaning = "the step's update over the weights, in norm",
         .value = stat(&lm::StepStats::update_ratio)},
        {.name = "output_logit_mean", .meaning = "the mean LM-head logit", .value = stat(&lm::StepStats::output_logit_mean)},
        {.name = "output_logit_max", .meaning = "the largest LM-head logit", .value = stat(&lm::StepStats::output_logit_max)},
        {.name = "final_residual_rms", .meaning = "RMS of the stream after the last block",
         .value = stat(&lm::StepStats::final_residual_rms)},
        {.name = "val_loss", .unit = "nats", .meaning = "the validation loss, at evaluation steps (else NaN)",
         .value = [](const Report& r) { return r.eval ? r.eval->val_loss : kNaN; }},
        {.name = "train_eval_loss", .unit = "nats",
         .meaning = "the training split's evaluated loss, at evaluation steps (else NaN)",
         .value = [](const Report& r) { return r.eval ? r.eval->train_loss : kNaN; }},
        {.name = "z_loss", .unit = "nats", .meaning = "the step's z-loss term (0 without --z-loss)",
         .value = result(&lm::StepResult::z_loss)},
        {.name = "log_z_mean", .unit = "nats", .meaning = "log Z, the LM head's logsumexp: its mean over the batch's tokens",
         .value = result(&lm::StepResult::log_z_mean)},
        {.name = "log_z_min", .unit = "nats", .meaning = "log Z: its minimum over the batch's tokens",
         .value = result(&lm::StepResult::log_z_min)},
    };
    const auto measured = lm::sharpness_values(lm::Sharpness::unmeasured());
    for (size_t i = 0; i < measured.size(); ++i)
      t.push_back({.name = measured[i].first,
                   .meaning = "an edge-of-stability measurement (lm/sharpness.h; NaN at steps without one)",
                   .sharpness = true,
                   .value = [i](const Report& r) {
                     return r.sharpness ? lm::sharpness_values(*r.sharpness)[i].second : kNaN;
                   }});
    const auto layer = [](double lm::LayerStats::*m) { return [m](const lm::LayerStats& l) { return l.*m; }; };
    for (CurveColumn c : std::vector<CurveColumn>{
             {.name = "residual_rms", .meaning = "RMS of the stream entering the layer",
              .layer_value = layer(&lm::LayerStats::residual_rms)},
             {.name = "norm_out_rms", .meaning = "RMS of what the layer's attention reads (its first norm's output)",
              .layer_value = layer(&lm::LayerStats::norm_out_rms)},
             {.name = "attention_logit", .meaning = "the layer's largest attention logit",
              .layer_value = layer(&lm::LayerStats::attention_logit)},
             {.name = "grad_norm", .meaning = "the layer's gradient norm", .layer_value = layer(&lm::LayerStats::grad_norm)},
             {.name = "update_ratio", .meaning = "the layer's update over its weights, in norm",
              .layer_value = layer(&lm::LayerStats::update_ratio)}}) {
      c.per_layer = true;
      t.push_back(c);
    }
    return t;
  }();
  return table;
}

bool is_column_name(const std::string& name) {
  return !name.empty() && name.size() <= 64 && std::islower(static_cast<unsigned char>(name[0])) &&
         name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
}
}  // namespace

const RunColumn& run_column(const std::string& name) {
  for (const RunColumn& c : run_columns())
    if (c.name == name) return c;
  std::string known;
  for (const RunColumn& c : run_columns()) known += (known.empty() ? "" : ", ") + c.name;
  throw Error(cat("run column '", name.substr(0, 64), "': no such column (run columns: ", known, ")"));
}

double column_value(const RunRecord& r, const RunColumn& c) {
  return std::visit(
      [&](auto member) -> double {
        if constexpr (std::is_same_v<decltype(member), Measured>) {
          const auto it = r.measured.find(c.name);
          return it == r.measured.end() ? kNaN : it->second;
        } else {
          using V = std::decay_t<decltype(r.*member)>;
          if constexpr (std::is_same_v<V, std::string>) return kNaN;
          else return static_cast<double>(r.*member);
        }
      },
      c.member);
}

bool flagged(const RunRecord& r, const RunColumn& c) {
  if (!c.flag || r.diverged) return false;
  const double v = column_value(r, c);
  return v > c.flag->above || v < c.flag->below;  // NaN (unmeasured, or no such limit) compares false
}

std::vector<const RunColumn*> judging_columns() {
  std::vector<const RunColumn*> j;
  for (const RunColumn& c : run_columns())
    if (c.flag) j.push_back(&c);
  return j;
}

namespace {
// The registries' lock for one registration: an Error while a sweep reads the tables.
std::unique_lock<std::shared_mutex> lock_for_registration(const char* what, const std::string& name) {
  const auto busy = [&] {
    return Error(cat(what, " '", name.substr(0, 64), "': a sweep is running in this process; register before it starts"));
  };
  if (schema_uses > 0) throw busy();  // this thread holds it shared: trying it alone would deadlock
  std::unique_lock<std::shared_mutex> lock(schema_mutex(), std::try_to_lock);
  if (!lock.owns_lock()) throw busy();
  return lock;
}
}  // namespace

void register_curve_column(CurveColumn c) {
  const auto lock = lock_for_registration("register_curve_column", c.name);
  check(is_column_name(c.name), "register_curve_column: '", c.name.substr(0, 64),
        "' is not a column name (lower_snake_case: a-z, 0-9, _, a letter first, at most 64)");
  check(c.per_layer ? static_cast<bool>(c.layer_value) : static_cast<bool>(c.value), "register_curve_column '", c.name,
        "': give the function reading it (", c.per_layer ? "layer_value" : "value", ")");
  for (const CurveColumn& o : curve_schema())
    check(o.name != c.name, "register_curve_column: '", c.name, "' is already a curve column");
  check(c.name != "run_id" && !identity_part(c.name), "register_curve_column: '", c.name, "' names a run's identity");
  curve_table().push_back(std::move(c));
  ++schema_generation;
}

void register_run_column(RunColumn c) {
  const auto lock = lock_for_registration("register_run_column", c.name);
  check(is_column_name(c.name), "register_run_column: '", c.name.substr(0, 64),
        "' is not a column name (lower_snake_case: a-z, 0-9, _, a letter first, at most 64)");
  check(std::holds_alternative<Measured>(c.member), "register_run_column '", c.name,
        "': a registered column is measured (member Measured): RunRecord's fields are tapegrad's own");
  check(c.fold.has_value() && !c.fold->of.empty(), "register_run_column '", c.name,
        "': give the curve columns it folds (fold: max, min or last of)");
  for (const std::string& of : c.fold->of) {
    bool found = false;
    for (const CurveColumn& k : curve_schema()) found = found || k.name == of;
    check(found, "register_run_column '", c.name, "': it folds '", of.substr(0, 64),
          "', which is not a curve column (register it first: register_curve_column)");
  }
  check(c.name != "settings" && c.name != "run_id" && !identity_part(c.name), "register_run_column: '", c.name,
        "' is a column runs.csv already has");
  for (const RunColumn& o : run_columns()) check(o.name != c.name, "register_run_column: '", c.name, "' is already a run column");
  check(!c.flag || !std::isnan(c.flag->above) || !std::isnan(c.flag->below), "register_run_column '", c.name,
        "': its flag needs a limit (above or below)");
  check(!c.flag || !c.flag->name.empty(), "register_run_column '", c.name, "': its flag needs a name for the report");
  // The texts go into report.md's tables and sentences: one line each, and the heading no cell divider.
  const auto text_ok = [&](const std::string& t, const char* field, size_t most, bool heading) {
    const bool control = std::any_of(t.begin(), t.end(), [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f; });
    check(t.size() <= most && !control && (!heading || t.find_first_of("|`") == std::string::npos), "register_run_column '",
          c.name, "': its ", field, " must be one line of at most ", most, " bytes", heading ? " without '|' or '`'" : "",
          " (got ", t.size(), " bytes", control ? ", with a control character" : "", ")");
  };
  text_ok(c.unit, "unit", 64, true);
  text_ok(c.summary, "summary", 200, false);
  text_ok(c.meaning, "meaning", 1000, false);
  if (c.flag) text_ok(c.flag->name, "flag name", 80, true), text_ok(c.flag->why, "flag's why", 1000, false);
  c.added_later = true;  // folders written before it was registered read it as unmeasured
  run_table().push_back(std::move(c));
  ++schema_generation;
}

std::string curve_row(const lm::StepReport& step, bool sharpness) {
  std::string row;
  const auto cell = [&](const CurveColumn& c, double v) {
    row += row.empty() ? "" : ",";
    row += c.type == ColumnType::kInt ? std::to_string(static_cast<int64_t>(v)) : csv_number(v);
  };
  for (const CurveColumn& c : curve_schema())
    if (!c.per_layer && (sharpness || !c.sharpness)) cell(c, c.value(step));
  if (step.stats != nullptr)
    for (const lm::LayerStats& l : step.stats->layers)
      for (const CurveColumn& c : curve_schema())
        if (c.per_layer) cell(c, c.layer_value(l));
  return row;
}

void fold_step(RunRecord& run, const lm::StepReport& step) {
  // Each folding run column with the curve columns it folds, looked up once per thread and
  // registration.
  thread_local uint64_t generation = ~uint64_t{0};
  thread_local std::vector<std::pair<const RunColumn*, std::vector<const CurveColumn*>>> folds;
  if (generation != schema_generation.load()) {
    generation = schema_generation.load();
    folds.clear();
    for (const RunColumn& rc : run_columns()) {
      if (!rc.fold) continue;
      std::vector<const CurveColumn*> of;
      for (const std::string& name : rc.fold->of)
        for (const CurveColumn& c : curve_schema())
          if (c.name == name) of.push_back(&c);
      folds.emplace_back(&rc, std::move(of));
    }
  }
  for (const auto& fold : folds) {
    const RunColumn* rc = fold.first;  // named, not a structured binding: the lambda below captures it
    double& into = std::holds_alternative<Measured>(rc->member) ? run.measured.try_emplace(rc->name, kNaN).first->second
                                                                : run.*std::get<double RunRecord::*>(rc->member);
    const auto take = [&](double v) {
      switch (rc->fold->kind) {
        case Fold::kLast: into = v; break;
        // !(v <= into) and !(v >= into): a NaN start (not measured yet) is replaced.
        case Fold::kMax: if (std::isfinite(v) && !(v <= into)) into = v; break;
        case Fold::kMin: if (std::isfinite(v) && !(v >= into)) into = v; break;
      }
    };
    for (const CurveColumn* c : fold.second) {
      if (!c->per_layer) take(c->value(step));
      else if (step.stats != nullptr)
        for (const lm::LayerStats& l : step.stats->layers) take(c->layer_value(l));
    }
  }
}

namespace {
// "run_id" and the run identity's settings, then `fields`.
std::vector<std::string> identified(const std::vector<std::string>& fields) {
  std::vector<std::string> c{"run_id"};
  for (const IdentityPart& p : run_identity()) c.push_back(p.key);
  c.insert(c.end(), fields.begin(), fields.end());
  return c;
}

std::vector<std::string> run_column_names() {
  std::vector<std::string> names;
  for (const RunColumn& c : run_columns()) names.push_back(c.name);
  names.push_back("settings");
  return names;
}

const std::map<std::string, std::string>& renamed_columns() {
  static const std::map<std::string, std::string> renamed = {
      {"depth", "layers"}, {"peak_max_logit", "peak_attention_logit"}, {"logit_mean", "output_logit_mean"},
      {"logit_max", "output_logit_max"}};
  return renamed;
}

ColumnType column_type(const RunColumn& c) {
  return std::visit(
      [](auto member) {
        if constexpr (std::is_same_v<decltype(member), Measured>) {
          return ColumnType::kReal;
        } else {
        using V = std::decay_t<decltype(std::declval<RunRecord&>().*member)>;
        if constexpr (std::is_same_v<V, int64_t>) return ColumnType::kInt;
        else if constexpr (std::is_same_v<V, double>) return ColumnType::kReal;
        else if constexpr (std::is_same_v<V, bool>) return ColumnType::kBool;
        else return ColumnType::kText;
        }
      },
      c.member);
}
}  // namespace

std::vector<std::string> run_columns_header() { return identified(run_column_names()); }

nlohmann::json records_schema() {
  nlohmann::json runs = nlohmann::json::array(), curves = nlohmann::json::array();
  for (const RunColumn& c : run_columns()) {
    nlohmann::json j = {{"name", c.name},       {"type", to_string(column_type(c))}, {"unit", c.unit},
                        {"summary", c.summary}, {"meaning", c.meaning}};
    if (c.flag) {
      if (!std::isnan(c.flag->above)) j["flag_above"] = c.flag->above;
      if (!std::isnan(c.flag->below)) j["flag_below"] = c.flag->below;
      j["flag_name"] = c.flag->name;
      j["flag_why"] = c.flag->why;
    }
    if (c.fold) j["fold"] = {{"kind", c.fold->kind == Fold::kMax ? "max" : c.fold->kind == Fold::kMin ? "min" : "last"},
                             {"of", c.fold->of}};
    runs.push_back(j);
  }
  for (const CurveColumn& c : curve_schema())
    curves.push_back({{"name", c.name},
                      {"type", to_string(c.type)},
                      {"unit", c.unit},
                      {"meaning", c.meaning},
                      {"per_layer", c.per_layer},
                      {"sharpness", c.sharpness}});
  nlohmann::json renamed = nlohmann::json::object();
  for (const auto& [old, now] : renamed_columns()) renamed[old] = now;
  return {{"version", 1}, {"runs", runs}, {"curves", curves}, {"renamed", renamed},
          {"renamed_prefixes", {{"max_logit_", "attention_logit_"}}}};
}

std::string current_column(const std::string& name) {
  if (const auto it = renamed_columns().find(name); it != renamed_columns().end()) return it->second;
  if (name.starts_with("max_logit_")) return "attention_logit_" + name.substr(10);
  return name;
}

std::vector<std::string> curve_columns(int64_t max_layers, bool sharpness) {
  std::vector<std::string> c = identified({});
  for (const CurveColumn& col : curve_schema())
    if (!col.per_layer && (sharpness || !col.sharpness)) c.push_back(col.name);
  for (int64_t i = 0; i < max_layers; ++i)
    for (const CurveColumn& col : curve_schema())
      if (col.per_layer) c.push_back(col.name + "_" + std::to_string(i));
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
  std::vector<std::string> cells{identity_cells(r.spec)};
  for (const RunColumn& c : run_columns())
    cells.push_back(std::visit(
        [&](auto member) -> std::string {
          if constexpr (std::is_same_v<decltype(member), Measured>) {
            return csv_number(column_value(r, c));
          } else {
          const auto& v = r.*member;
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, double>) return csv_number(v);
          else if constexpr (std::is_same_v<V, bool>) return v ? "1" : "0";
          else if constexpr (std::is_same_v<V, int64_t>) return std::to_string(v);
          else return v;
          }
        },
        c.member));
  cells.push_back(r.spec.settings_text(";"));
  return csv_join(cells);
}

void write_runs(const std::string& path, const std::vector<RunRecord>& runs) {
  std::string s = csv_join(run_columns_header()) + "\n";
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

std::vector<RunRecord> parse_runs(const std::string& text, const std::string& path) {
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header = csv_split(line);
  for (std::string& name : header) name = current_column(name);
  // Columns are found by name: files written by earlier versions lack the later columns (they
  // read as unmeasured), hold them in another order or under their old names; every name must
  // be one of run_columns_header() (a registered column is known only to a program that registered it).
  const std::vector<std::string> known = run_columns_header();
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < header.size(); ++i) {
    check(std::find(known.begin(), known.end(), header[i]) != known.end(), path, ": unknown column '",
          header[i].substr(0, 40), "' in the header (columns: ", csv_join(known),
          "; a column a program registered reads only in a program that registers it)");
    check(at.emplace(header[i], i).second, path, ": column '", header[i], "' appears twice in the header");
  }
  const auto require = [&](const std::string& column) {
    check(at.count(column), path, ": the header lacks column '", column, "' (expected ", csv_join(known), ")");
  };
  require("run_id");
  for (const IdentityPart& p : run_identity()) require(p.key);
  for (const RunColumn& c : run_columns())
    if (!c.added_later) require(c.name);
  std::vector<RunRecord> runs;
  for (int n = 2; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    const auto f = csv_split(line);
    const std::string where = cat(path, ":", n);
    check(f.size() == header.size(), where, ": ", f.size(), " fields, expected ", header.size());
    const auto has = [&](const char* column) { return at.count(column) > 0; };
    const auto field = [&](const char* column) -> const std::string& { return f[at.at(column)]; };
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
    for (const RunColumn& c : run_columns()) {
      if (!has(c.name.c_str())) continue;  // a later column, absent from an older file: unmeasured
      const std::string& cell_text = field(c.name.c_str());
      std::visit(
          [&](auto member) {
            if constexpr (std::is_same_v<decltype(member), Measured>) {
              r.measured[c.name] = cell<double>(cell_text, c.name, where);
              return;
            } else {
            auto& into = r.*member;
            using V = std::decay_t<decltype(into)>;
            if constexpr (std::is_same_v<V, bool>) {
              check(cell_text == "0" || cell_text == "1", where, ": column '", c.name, "' must be 0 or 1, got '",
                    cell_text.substr(0, 40), "'");
              into = cell_text == "1";
            } else if constexpr (std::is_same_v<V, std::string>) {
              into = cell_text;
            } else {
              into = cell<V>(cell_text, c.name, where);
            }
            }
          },
          c.member);
    }
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

void write_curves_csv(const std::string& out, const std::map<std::string, RunRecord>& runs, bool sharpness) {
  // Every run's curve under the deepest run's columns. Each file's cells are placed by its own
  // header, so a curve written before a column existed leaves that column empty.
  int64_t max_layers = 0;
  for (const auto& [id, r] : runs) max_layers = std::max(max_layers, r.spec.get<int64_t>("layers"));
  const std::vector<std::string> columns = curve_columns(max_layers, sharpness);
  std::string curves = csv_join(columns) + "\n";
  for (const auto& [id, r] : runs) {
    const std::string path = out + "/curves/" + id + ".csv";
    std::istringstream in(io::read_file(path, kMaxCurveBytes));
    std::string line;
    std::getline(in, line);
    std::vector<std::string> header = csv_split(line);
    for (std::string& name : header) name = current_column(name);
    std::vector<int> source(columns.size(), -1);  // column k of curves.csv is the file's column source[k]
    for (size_t k = 0; k < columns.size(); ++k)
      if (const auto it = std::find(header.begin(), header.end(), columns[k]); it != header.end())
        source[k] = static_cast<int>(it - header.begin());
    for (int n = 2; std::getline(in, line); ++n) {
      const std::vector<std::string> f = csv_split(line);
      check(f.size() == header.size(), path, ":", n, ": ", f.size(), " fields, expected ", header.size());
      std::vector<std::string> row(columns.size());
      for (size_t k = 0; k < columns.size(); ++k)
        if (source[k] >= 0) row[k] = f[static_cast<size_t>(source[k])];
      curves += csv_join(row) + "\n";
    }
  }
  io::write_file_atomic(out + "/curves.csv", curves);
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
