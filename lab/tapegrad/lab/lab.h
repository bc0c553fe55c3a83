// The lab's one entry point: a sweep, its report and its plots. compare_norms and
// tapegrad.lab.sweep both run it; they differ only in how they are told things (the hooks) — flags
// and stderr there, keywords, callbacks and exceptions in Python.
//
//   lab::LabResult r = lab::run_lab(options, given, defaults, "compare_norms --out runs/x", hooks);
//
// In order: the folder's lock (rank 0), the grid resolved against the one in o.out (resolve_sweep)
// and the folder verified against it, the settings' warnings, every run not yet recorded
// (run_sweep), then report.md, the plots (hooks.draw_plots, which read report.md for report.html)
// and report.md again with its figures and where the time went.
#pragma once

#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "tapegrad/lab/report.h"
#include "tapegrad/lab/sweep.h"
#include "tapegrad/lm/communicator.h"

namespace tapegrad::lab {

struct LabHooks {
  // Before the first run: the settings' warnings (with {key} markers, as SettingError's), then how
  // many runs the grid holds and whether it was grown from the folder's sweep.json.
  std::function<void(const std::string& warning)> on_warning{};
  std::function<void(size_t runs, const SweepOptions& resolved, bool resumed)> on_start{};
  // Each finished or skipped run, and once, when a core frees up in the last runs (run_sweep).
  std::function<void(const RunRecord&, bool skipped, int done, int total)> on_run{};
  std::function<void()> on_tail{};
  // Polled at every step beside the process's stop signal: true stops the sweep, resumably.
  std::function<bool()> stop_requested{};
  // Draws the plots into o.out/plots from the folder's files; returns a note when it drew none
  // ("plots skipped: ..."). Empty: no plots.
  std::function<std::string(const Summary&)> draw_plots{};
};

struct LabResult {
  SweepOptions options;  // the grid as resolved against the folder
  std::vector<RunRecord> runs;  // every run of the grid (rank 0; empty on the other ranks)
  // Stopped by a signal or stop_requested before the grid was done: its runs so far are recorded
  // (the same call continues the folder), and no report was written.
  bool stopped = false;
  size_t total = 0;  // runs in the grid
  Summary summary;
  ReportContext context;  // the report's: plots, timing, the command
  std::string report_path, plot_note;
};

// `given`: the settings the caller named (a recipe leaves them alone, sweep.h); `defaults`: the
// options before the caller's settings, so the report's reproduce command names what differs.
LabResult run_lab(SweepOptions o, const std::set<std::string>& given, const SweepOptions& defaults,
                  const std::string& this_command, const LabHooks& hooks, const lm::Communicator* comm = nullptr);

}  // namespace tapegrad::lab
