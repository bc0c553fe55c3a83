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
//   runs.csv           one row per finished run (columns: run_columns_header()), assembled from records/
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

#include "tapegrad/lab/grid.h"
#include "tapegrad/lab/records.h"
#include "tapegrad/lab/run_spec.h"
#include "tapegrad/lab/sweep_options.h"
#include "tapegrad/lab/timing.h"
#include "tapegrad/lab/train_run.h"
#include "tapegrad/lm/communicator.h"
#include "tapegrad/lm/divergence.h"
#include "tapegrad/lm/train_config.h"
#include "tapegrad/lm/trainer.h"

namespace tapegrad::lab {

// The settings table's warnings (TrainConfig::warnings) of the sweep's runs, each once, with the
// runs it concerns when not all ("{warmup} 30 is not shorter than {steps} 20 ... (in the runs
// with dim=32)"); with {key} markers, as SettingError's.
std::vector<std::string> sweep_warnings(const SweepOptions& o);

// Throws, naming both, if the folder o.out holds runs that trained on other data or with other
// settings than the grid `o` (resolved) gives them: what run_sweep refuses, checked before any output.
void verify_sweep_folder(const SweepOptions& o);
// The unigram loss of the sweep's data (lm::unigram_loss): the bar a run must beat to count as trained.
double sweep_unigram_loss(const SweepOptions& o);

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

// `stop_requested`, if given, is polled at every step of every run (from the workers' threads)
// beside the process's stop signal (lm::stop_signal): true stops the sweep as a signal does —
// the runs in flight are dropped, the folder stays resumable (Python's Ctrl-C comes this way).
std::vector<RunRecord> run_sweep(const SweepOptions& o,
                                 const std::function<void(const RunRecord&, bool skipped, int done, int total)>& on_run,
                                 const lm::Communicator* comm = nullptr, SweepTiming* timing = nullptr,
                                 const std::function<void()>& on_tail = {},
                                 const std::function<bool()>& stop_requested = {});

}  // namespace tapegrad::lab
