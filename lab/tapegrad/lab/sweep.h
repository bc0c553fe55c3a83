// The lab's sweep: one training run per point of its grid (grid.h: norm x placement x learning
// rate x seed x layers x warmup x any other training setting given several values), every run on
// the same data with the same initialisation seed and the same batches (the seed fixes both), so
// norms are compared pairwise on identical inputs.
//
// Files in the output directory (written atomically, so a killed sweep loses at most the runs in
// flight; restarting it skips every run already recorded):
//   curves/<id>.csv    one row per step of that run (columns: curve_columns()), written first
//   records/<id>.csv   the run's row of runs.csv: a file per run, so ranks of a distributed sweep
//                      (and machines sharing the directory) never write the same file
//   runs.csv           one row per finished run (columns: kRunColumns), assembled from records/
//   curves.csv         all runs' curves concatenated, written at the end of a sweep
//   records/<id>.json  the run's proof, written last: the settings and data (size, SHA-256) it
//                      trained with, and the SHA-256 of its curve and record. A run counts as done
//                      only when all three agree; a missing or changed curve or record means it
//                      trains again, and a run whose settings or data differ from the grid's now
//                      (an edited sweep.json, another --data) is an error naming both. A run
//                      without a proof is trained again: killed between its files, or copied in.
//                      Only a folder written before proofs existed (sweep.json without
//                      "run_proofs", no proof in records/) has its runs adopted, once each
//                      record agrees with the grid, and hashed from then on
//   sweep.json         the whole grid (grid.h) and the data's identity: `compare_norms --out DIR`
//                      alone continues it, and values given on a later command add to it
//
// Each file is written whole (io::write_file_atomic: fsynced, renamed, the folder fsynced) in that
// order, so a kill at any instant leaves a run either done (its proof written) or trained again.
//
// Under MPI (`mpirun -np N compare_norms ...`), rank r trains runs r, r + N, ... of those not yet
// recorded; after a barrier rank 0 assembles runs.csv and curves.csv and writes the report.
#pragma once

#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tapegrad/lab/run_spec.h"
#include "tapegrad/lab/timing.h"
#include "tapegrad/lm/communicator.h"
#include "tapegrad/lm/divergence.h"
#include "tapegrad/lm/train_config.h"
#include "tapegrad/lm/trainer.h"

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
  double min_log_z = std::numeric_limits<double>::quiet_NaN();
};

extern const std::vector<std::string> kRunColumns;
// A column as this version names it: files written before a rename (depth, peak_max_logit,
// logit_mean, logit_max, max_logit_<i>) are read under the new names (layers, peak_attention_logit,
// output_logit_mean, output_logit_max, attention_logit_<i>).
std::string current_column(const std::string& name);
// With `sharpness`, six columns after the run's own: sharpness, sharpness_threshold,
// precond_sharpness, precond_threshold, batch_sharpness, batch_lambda_max (NaN at steps without
// a measurement; the batch ones without --batch-sharpness).
std::vector<std::string> curve_columns(int64_t max_layers, bool sharpness = false);

// A setting the sweep varies, with its values (canonical, grid.h; two or more).
struct Axis {
  std::string key;
  std::vector<nlohmann::json> values;
  bool operator==(const Axis&) const = default;
};
std::vector<Axis> every_norm_axis();  // {"norm": every registered norm}: SweepOptions' default

struct SweepOptions {
  // Every setting's value where no axis gives several (base.instrument is forced on); the lab
  // numbers its seeds from 1.
  lm::TrainConfig base = [] {
    lm::TrainConfig c;
    c.seed = 1;
    return c;
  }();
  // Training settings the user named (flags, Python keywords), whatever their value: a recipe
  // never overrides them, as train_lm's flags given win over its recipe (a value equal to the
  // default included: `--recipe dyt-paper-transfer --tie-head true`). The front end that parses
  // the user's words fills it (name_given); stored in sweep.json ("given").
  std::set<std::string> given;
  // The axes in the sweep's order (grid.h: set them with set_axis). Default: every registered norm.
  std::vector<Axis> axes = every_norm_axis();
  double min_lr_ratio = 0.1;     // each run decays to lr * ratio
  double divergence_factor = 1.5;
  int64_t divergence_patience = 10;  // steps above the factor before a run counts as diverged (divergence.h)
  double spike_factor = 1.3;         // a loss above this x its running mean starts a spike
  int64_t evals = 4;             // evaluations per run, evenly spaced (the last at the final step)
  int jobs = 1;                  // runs at once; each gets max(1, cores / jobs) threads
  std::string out;
};
// Records in o.given the training settings among `named` (flag names: the sweep's own and other
// words are skipped), so that a recipe leaves them alone.
void name_given(SweepOptions& o, const std::set<std::string>& named);

// The lab's defaults, compare_norms' and tapegrad.lab's: short runs of an L4 H4 C64 T64 model at
// batch 8, five learning rates from 1e-3 (every norm trains) to 1e-1 (where the normalised models
// give out too), two seeds, every registered norm, each on its authors' recipe (DyT on its
// paper's, lm/recipes.h) — ~5 min on 2 cores. Runs at once: the cores over `local_ranks`
// processes sharing the machine.
SweepOptions default_sweep(int local_ranks = 1);

// Every run recorded in the folder `out` (runs.csv and records/), by id; an Error names the file
// and line of a record that does not read.
std::map<std::string, RunRecord> recorded_runs(const std::string& out);

// The training settings of one run: the base, the run's axis values, and the lab's bookkeeping.
lm::TrainConfig run_config(const SweepOptions& o, const RunSpec& spec, int threads);

// The settings table's warnings (TrainConfig::warnings) of the sweep's runs, each once, with the
// runs it concerns when not all ("{warmup} 30 is not shorter than {steps} 20 ... (in the runs
// with dim=32)"); with {key} markers, as SettingError's.
std::vector<std::string> sweep_warnings(const SweepOptions& o);

// Throws, naming both, if the folder o.out holds runs that trained on other data or with other
// settings than the grid `o` (resolved) gives them: what run_sweep refuses, checked before any output.
void verify_sweep_folder(const SweepOptions& o);
// The unigram loss of the sweep's data (lm::unigram_loss): the bar a run must beat to count as trained.
double sweep_unigram_loss(const SweepOptions& o);

// All runs of the sweep, in the sweep's order (grid.h: axis_keys(), outermost first). Every
// run's settings are validated here (train_lm's rules), so a bad combination fails before training.
std::vector<RunSpec> expand(const SweepOptions& o);

// Trains one run. `curve` receives one CSV line per step (curve_columns order). Returns early,
// with diverged set, on divergence; `stop` (polled each step) aborts with nullopt. `timing`, if
// given, receives where the run's time went (timing.h).
std::optional<RunRecord> run_one(const SweepOptions& o, const RunSpec& spec,
                                 std::shared_ptr<const text::Tokenizer> tokenizer,
                                 std::shared_ptr<const lm::TokenData> data, int threads, std::string& curve,
                                 const std::function<bool()>& stop, RunTiming* timing = nullptr);

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

// Runs every run of the sweep not already recorded; `on_run` reports each finished or skipped
// run (for progress output). The sweep is o grown by the grid already in o.out
// (resolve_sweep(o, every setting): values add, a setting that cannot be an axis must agree),
// and sweep.json is rewritten to it. Returns all records of that grid, in sweep order (on rank 0;
// the other ranks of a distributed sweep get an empty list). `timing`, if given, receives where
// this process's time went (timing.h: the runs it trained, before the first and after the last;
// report_s and wall_s are the caller's). `on_tail`, if given, is called once, from a worker
// thread, when the first of several workers finds no run left to start while another still
// trains: from then on a core is free, for work the caller does after the sweep (compare_norms
// starts its plotting interpreter there). Not called when the sweep is stopped.
// A fault-injection seam for tests (as SQLite's test_control): called after each of a run's files
// is written ("curve", "record", "proof") with the run's id; a test kills the process there to
// prove that every boundary leaves the folder consistent. Empty (the default): nothing is called.
void set_write_boundary_hook(std::function<void(const std::string& file, const std::string& run_id)> hook);

std::vector<RunRecord> run_sweep(const SweepOptions& o,
                                 const std::function<void(const RunRecord&, bool skipped, int done, int total)>& on_run,
                                 const lm::Communicator* comm = nullptr, SweepTiming* timing = nullptr,
                                 const std::function<void()>& on_tail = {});

}  // namespace tapegrad::lab
