// The lab's report: report.md (the tables, a plain-language reading generated from the
// numbers, the plots and where the time went) and the console's summary, written from the
// judgements of summary.h.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tapegrad/lab/summary.h"
#include "tapegrad/lab/sweep.h"
#include "tapegrad/lab/timing.h"

namespace tapegrad::lab {

// "1.939 ± 0.012 (n=3)": a group's best loss with its seed spread.
std::string best_loss_text(const Group& g);

struct ReportContext {
  std::string command;       // how to reproduce the whole grid
  std::string this_command;  // the command that last grew or continued it
  std::string grid;          // "5 norms x 5 lrs x 2 seeds" (grid_shape)
  std::string data;     // what it trained on
  std::string model;    // e.g. "C128 H4 T64 B12, 300 steps"
  double wall_s = 0;
  std::vector<std::pair<std::string, std::string>> plots;  // file, caption
  SweepTiming timing;  // where this command's time went (no section when it trained no run)
};

std::string reading(const Summary& s);  // the plain-language paragraph, as bullet lines
std::string report_markdown(const Summary& s, const std::vector<RunRecord>& runs, const ReportContext& ctx);
std::string console_summary(const Summary& s);

// "C128 H4 T64 B8, 300 steps, adamw, warmup then cosine to lr x 0.1": a sweep's base settings.
std::string model_text(const SweepOptions& o);
// The report's context from the sweep (data, model, grid, the command that reproduces it from
// `defaults`, the lab's defaults); this_command, wall_s and plots are the caller's.
ReportContext report_context(const SweepOptions& o, const SweepOptions& defaults);
// The plots lab/plot_lab.py draws into DIR/plots, with the report's caption for each.
const std::vector<std::pair<std::string, std::string>>& plot_captions();
// The plots of plot_captions() present in the folder `out`, in that order.
std::vector<std::pair<std::string, std::string>> plots_in(const std::string& out);

}  // namespace tapegrad::lab
