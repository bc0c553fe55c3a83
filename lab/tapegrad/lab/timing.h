// Where a sweep's time goes. The lab's aim is that its wall time be the runs' pure training steps:
// what a sweep adds around them — evaluation, the instrumentation's statistics, sharpness probes,
// building each run, its curve and files, reading the data before the first run, assembling
// runs.csv and curves.csv after the last, the report and plots, and cores left idle while the
// last runs finish — is measured here, so the summary can say what it costs.
//
// Runs train `jobs` at a time, so a run's seconds count 1/jobs of the wall time; the idle share
// is the wall time the measured parts leave unexplained (chiefly the tail, when fewer runs than
// jobs remain).
#pragma once

#include <string>

namespace tapegrad::lab {

// One run's time, in seconds of that run's own clock.
struct RunTiming {
  double steps_s = 0;       // Trainer::train_step, the instrumentation's statistics included
  double instrument_s = 0;  // of steps_s, the statistics after backward and around the update
  double eval_s = 0, sharpness_s = 0;
  double setup_s = 0;   // building the run's trainer (model, optimizer, batches)
  double record_s = 0;  // each step's curve line, then the run's curve, record and proof files
  RunTiming& operator+=(const RunTiming& o);
  double pure_steps_s() const { return steps_s - instrument_s; }
  double total_s() const { return steps_s + eval_s + sharpness_s + setup_s + record_s; }
};

// A command's sweep: the runs it trained (not those recorded earlier) and its own parts.
struct SweepTiming {
  int trained = 0;  // runs this command trained
  int jobs = 1;     // at once
  RunTiming runs;   // summed over the runs trained
  double prepare_s = 0;  // before the first run: the data, the grid, the folder's proofs
  double gather_s = 0;   // after the last: runs.csv and curves.csv checked and assembled
  double report_s = 0;   // the report and the plots (the caller's)
  double wall_s = 0;     // the whole command (the caller's)
  // The runs' pure step time as a share of the wall time: (pure steps / jobs) / wall.
  double step_share() const;
  // The wall time not covered by the measured parts: idle cores at the end, scheduling.
  double idle_s() const;
};

// "| part | seconds | share of the wall time |" rows, for report.md.
std::string timing_markdown(const SweepTiming& t);
// One line for the console: "time:    52 s, 82.5 % of it pure training steps (50 runs, 2 at a time);
// the rest: instrumentation (per-layer statistics) 1.8 %, ..." (parts under 0.05 s left out).
std::string timing_line(const SweepTiming& t);

}  // namespace tapegrad::lab
