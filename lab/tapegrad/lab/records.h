// The lab's records: a finished run's row (RunRecord; runs.csv and records/<id>.csv), its curve's
// columns (curves/<id>.csv, curves.csv) and its proof (records/<id>.json) — how each is written
// and read back, strictly, as untrusted files (sweep.h says when each is written).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "tapegrad/lab/run_spec.h"
#include "tapegrad/lm/instrument.h"
#include "tapegrad/lm/run.h"

namespace tapegrad::lab {

// Largest files the sweep reads back: a record or proof is a line, a curve a line per step (~2 KB);
// anything larger is refused, naming the file, before it is read.
inline constexpr int64_t kMaxRecordBytes = int64_t{1} << 20;
inline constexpr int64_t kMaxRunsBytes = int64_t{256} << 20;
inline constexpr int64_t kMaxCurveBytes = int64_t{256} << 20;
inline constexpr int64_t kMaxGridBytes = int64_t{16} << 20;  // sweep.json

// One finished run; a row of runs.csv. Losses of a diverged run that never got evaluated are NaN.
struct RunRecord {
  RunSpec spec;
  int64_t steps = 0, steps_done = 0;
  double initial_loss = 0;                       // the loss at step 1
  double final_train_loss = 0, min_train_loss = 0;  // from the evaluations (eval_iters batches)
  double final_val_loss = 0, min_val_loss = 0;
  bool diverged = false;
  int64_t divergence_step = 0;
  std::string divergence_cause, divergence_quantity;
  double step_ms = 0, tokens_per_s = 0;          // mean over the steps after the first
  double peak_residual_rms = 0;                  // max over steps and layers (and the final stream)
  double final_residual_rms = 0;                 // after the last block, at the last step
  double peak_attention_logit = 0;                     // max over steps and layers
  double wall_s = 0;
  // With --sharpness-every: the largest edge_ratio (sharpness over its threshold, sharpness.h) and
  // the first measured step where it reached 1 (0: never; NaN / 0 when not measured).
  double peak_sharpness_ratio = std::numeric_limits<double>::quiet_NaN();
  int64_t sharpness_cross_step = 0;
  // With --batch-sharpness: the largest batch sharpness over the plain threshold (2/lr under
  // plain SGD; NaN when not measured), the edge of mini-batch training (sharpness.h).
  double peak_batch_sharpness_ratio = std::numeric_limits<double>::quiet_NaN();
  int64_t spikes = 0;  // loss spikes that recovered (divergence.h)
  double peak_output_logit = std::numeric_limits<double>::quiet_NaN();  // largest LM-head logit, max over steps
  // log Z = logsumexp of the LM head's logits (what the z-loss pulls to 0): the lowest over steps of
  // its mean over the batch's tokens, and of its minimum over them. Output-logit divergence shows
  // as these drifting very negative (Wortsman et al. 2023); NaN when the record predates them.
  double min_log_z_mean = std::numeric_limits<double>::quiet_NaN();
  // The lowest mean LM-head logit over the run's steps: what Wortsman et al. 2023 (§3.2) plot for
  // output-logit divergence (log Z's drift is the lab's flag; the two move together).
  double min_output_logit_mean = std::numeric_limits<double>::quiet_NaN();
  double min_log_z = std::numeric_limits<double>::quiet_NaN();
  // The run columns a program registered (register_run_column), by name; absent: unmeasured (NaN).
  std::map<std::string, double> measured;
};

// The lab's record schema, declared once: every column of runs.csv and of the curves, with its
// type, unit, meaning and how a run's steps become it. A step's curve row is computed from it
// (curve_row), a run's summaries folded from the curve by it (fold_step), runs.csv written and read
// from it (csv_row, parse_runs), and it is written into each folder's sweep.json ("schema",
// records_schema()) for the plots and Python to read instead of copying it.
//
// Adding a measured run quantity that summarises a step's value (its largest, smallest or last):
// a RunRecord field (here) and a row of run_columns() naming the curve column it folds — with a
// row of curve_schema() when the step's value is new. docs/extending.md has the recipe.
enum class ColumnType { kInt, kReal, kBool, kText };
std::string to_string(ColumnType t);  // "int" | "real" | "bool" | "text"

// Where a run column's value lives: a RunRecord member, or (Measured, a registered column's)
// RunRecord::measured under the column's name.
struct Measured {};
using RunMember =
    std::variant<Measured, int64_t RunRecord::*, double RunRecord::*, bool RunRecord::*, std::string RunRecord::*>;

// How a run column summarises curve columns at every step: the largest or smallest finite value
// (a per-layer column over every layer), or the last value (NaN too).
struct Fold {
  enum Kind { kMax, kMin, kLast };
  Kind kind;
  std::vector<std::string> of;  // curve columns (per-layer ones by their prefix)
};

struct CurveColumn;

struct RunColumn {
  std::string name{};
  RunMember member{};     // Measured for a registered column
  std::string unit{};     // "nats", "ms", "steps", ...; "" for a ratio or a count
  std::string summary{};  // how the run's steps become the cell: "last evaluation", "max over steps and layers", ...
  std::string meaning{};
  std::optional<Fold> fold{};  // folded from the curve by fold_step; else set where the run ends (train_run.cpp)
  // Written since a later version: files without the column read it as unmeasured (NaN, 0, "").
  bool added_later = false;
  // A judgement: a run that did not diverge and whose value is beyond the limit is flagged — not
  // clean, so its learning rate does not count as one that trained (summary.h). The report counts
  // flagged runs under `name`, lists them, and says `why`; the plots draw the limit.
  struct Flag {
    double above = std::numeric_limits<double>::quiet_NaN(), below = std::numeric_limits<double>::quiet_NaN();
    std::string name{};  // the count's heading: "attention logit > 1e4"
    std::string why{};   // what crossing it means, and whose rule it is
  };
  std::optional<Flag> flag{};
};
// After run_id and the run identity's settings (run_spec.h), in runs.csv's order: tapegrad's, then
// the registered ones; then "settings" (the run's swept settings beyond the identity, "key=value;...").
const std::vector<RunColumn>& run_columns();
// The run column called `name`, or an Error listing them.
const RunColumn& run_column(const std::string& name);
// Whether a run is flagged by the column's judgement (RunColumn::flag; false without one).
bool flagged(const RunRecord& r, const RunColumn& c);
// The run columns that judge runs, in run_columns()' order.
std::vector<const RunColumn*> judging_columns();
// The column's value of a run, as a number (an int or bool column as its value; a text one NaN).
double column_value(const RunRecord& r, const RunColumn& c);

// The registries are open: a program adds its own measured quantities before its first sweep, and
// from then on they are written, read back, folded, judged, reported and plotted as tapegrad's
// own (docs/extending.md, "A lab measurement"). A curve column: its name and the function reading
// it from a step. A run column: a number (member Measured) folded from curve columns (`fold`,
// required), optionally with a Flag. Names are new, lower_snake_case; older folders read the
// column as unmeasured. Register before a sweep starts: while one runs in the process (a
// SchemaInUse is held), registering is an Error saying so.
void register_curve_column(CurveColumn c);
void register_run_column(RunColumn c);

// Held by whatever reads the tables for a while (run_lab, run_sweep: their worker threads fold
// every step by them): registrations wait for no one and fail while one is held. Nests within a
// thread.
class SchemaInUse {
 public:
  SchemaInUse();
  ~SchemaInUse();
  SchemaInUse(const SchemaInUse&) = delete;
  SchemaInUse& operator=(const SchemaInUse&) = delete;

 private:
  bool holds_ = false;
};

// A column of the curves (curves/<id>.csv, curves.csv), after run_id and the identity settings,
// with its value at a step: of the step, or (per_layer, written name_<layer>) of each layer.
struct CurveColumn {
  std::string name, unit{}, meaning{};
  bool per_layer = false;
  bool sharpness = false;  // written with --sharpness-every only (lm::sharpness_values)
  ColumnType type = ColumnType::kReal;
  std::function<double(const lm::StepReport&)> value{};
  std::function<double(const lm::LayerStats&)> layer_value{};
};
// The step's columns, then the sharpness measurement's (lm::sharpness_values), then the per-layer ones.
const std::vector<CurveColumn>& curve_schema();

// A step's row of the curve (after run_id and the identity cells): each column's value.
std::string curve_row(const lm::StepReport& step, bool sharpness);
// Folds a step into the run's columns that summarise the curve (RunColumn::fold).
void fold_step(RunRecord& run, const lm::StepReport& step);

// The schema as JSON: {"runs": [{name, type, unit, summary, meaning, flag_above/flag_below, flag_name}],
// "curves": [{name, unit, meaning, per_layer}], "renamed": {old: new}} (sweep.json's "schema").
nlohmann::json records_schema();

// The limits the report judges runs by (report.h), held by their columns.
inline constexpr double kAttentionLogitLimit = 1e4;  // peak_attention_logit
inline constexpr double kLogZFloor = -10;            // min_log_z_mean, nats

// runs.csv's header: run_id, the identity settings, every run column, "settings".
std::vector<std::string> run_columns_header();
// A column as this version names it: files written before a rename (depth, peak_max_logit,
// logit_mean, logit_max, max_logit_<i>) are read under the new names (layers, peak_attention_logit,
// output_logit_mean, output_logit_max, attention_logit_<i>).
std::string current_column(const std::string& name);
// With `sharpness`, lm::sharpness_values()' names after the run's own: sharpness,
// sharpness_threshold, precond_sharpness, precond_threshold, batch_sharpness, batch_lambda_max
// and the eigenvector's anatomy (NaN at steps without a measurement; the batch ones without
// --batch-sharpness).
std::vector<std::string> curve_columns(int64_t max_layers, bool sharpness = false);

// runs.csv I/O. read_runs returns {} for a missing file and names the line of a malformed row.
std::vector<RunRecord> read_runs(const std::string& path);
// The rows of a runs.csv or record file's text; errors name `path` and the line.
std::vector<RunRecord> parse_runs(const std::string& text, const std::string& path);
void write_runs(const std::string& path, const std::vector<RunRecord>& runs);
std::string csv_row(const RunRecord& r);

// curves.csv in `out`: every run's curve (curves/<id>.csv) under the deepest run's columns, by id.
void write_curves_csv(const std::string& out, const std::map<std::string, RunRecord>& runs, bool sharpness);

// Every run recorded in the folder `out` (runs.csv and records/), by id; an Error names the file
// and line of a record that does not read.
std::map<std::string, RunRecord> recorded_runs(const std::string& out);

// CSV cells as the records write them: a number in %.7g ("nan" for NaN), a row's cells joined by
// commas and split back (a trailing comma is an empty last cell); the first cells of a runs.csv
// or curve row (run_id and the identity settings, as the id writes them).
std::string csv_number(double v);
std::string csv_join(const std::vector<std::string>& cells);
std::vector<std::string> csv_split(const std::string& line);
std::string identity_cells(const RunSpec& spec);
// j[key] as text, or "" when it is absent or not a string (files are read as untrusted).
std::string text_field(const nlohmann::json& j, const char* key);

}  // namespace tapegrad::lab
