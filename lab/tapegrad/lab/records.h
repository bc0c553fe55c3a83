// The lab's records: a finished run's row (RunRecord; runs.csv and records/<id>.csv), its curve's
// columns (curves/<id>.csv, curves.csv) and its proof (records/<id>.json) — how each is written
// and read back, strictly, as untrusted files (sweep.h says when each is written).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tapegrad/lab/run_spec.h"

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
};

extern const std::vector<std::string> kRunColumns;
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
// A run's proof (records/<id>.json, see above), read strictly: an Error names `path`.
struct RunProof {
  nlohmann::json config, data;
  std::string record_sha256, curve_sha256;
};
RunProof parse_proof(const std::string& text, const std::string& path);
// The rows of a runs.csv or record file's text; errors name `path` and the line.
std::vector<RunRecord> parse_runs(const std::string& text, const std::string& path);
void write_runs(const std::string& path, const std::vector<RunRecord>& runs);
std::string csv_row(const RunRecord& r);

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
