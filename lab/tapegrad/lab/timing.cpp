#include "tapegrad/lab/timing.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

namespace tapegrad::lab {

RunTiming& RunTiming::operator+=(const RunTiming& o) {
  steps_s += o.steps_s, instrument_s += o.instrument_s, eval_s += o.eval_s, sharpness_s += o.sharpness_s;
  setup_s += o.setup_s, record_s += o.record_s;
  return *this;
}

namespace {

double per_job(const SweepTiming& t, double run_seconds) { return run_seconds / std::max(1, t.jobs); }

// The parts in wall-clock seconds, in the order the summary lists them.
std::vector<std::pair<const char*, double>> parts(const SweepTiming& t) {
  return {{"training steps, pure", per_job(t, t.runs.pure_steps_s())},
          {"instrumentation (per-layer statistics)", per_job(t, t.runs.instrument_s)},
          {"evaluation", per_job(t, t.runs.eval_s)},
          {"sharpness", per_job(t, t.runs.sharpness_s)},
          {"building each run", per_job(t, t.runs.setup_s)},
          {"curves and records", per_job(t, t.runs.record_s)},
          {"before the first run (data, grid, proofs)", t.prepare_s},
          {"after the last (runs.csv, curves.csv)", t.gather_s},
          {"report and plots", t.report_s},
          {"idle cores while the last runs finish", t.idle_s()}};
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string share(double s, double wall) { return wall > 0 ? fmt("%.1f %%", 100 * s / wall) : "-"; }

}  // namespace

double SweepTiming::step_share() const { return wall_s > 0 ? per_job(*this, runs.pure_steps_s()) / wall_s : 0; }

double SweepTiming::idle_s() const {
  const double covered = per_job(*this, runs.total_s()) + prepare_s + gather_s + report_s;
  return std::max(0.0, wall_s - covered);
}

std::string timing_markdown(const SweepTiming& t) {
  std::string md = "| part | seconds of wall time | share |\n|---|---|---|\n";
  for (const auto& [name, s] : parts(t)) md += std::string("| ") + name + " | " + fmt("%.1f", s) + " | " + share(s, t.wall_s) + " |\n";
  md += "| **the command** | **" + fmt("%.1f", t.wall_s) + "** | 100 % |\n";
  return md;
}

std::string timing_line(const SweepTiming& t) {
  if (t.trained == 0) return "time:    " + fmt("%.1f s", t.wall_s) + ", no run trained (each was in the folder already)";
  std::string line = "time:    " + fmt("%.0f s", t.wall_s);
  line += ", " + share(per_job(t, t.runs.pure_steps_s()), t.wall_s) + " of it pure training steps (" + std::to_string(t.trained) +
          " runs, " + std::to_string(t.jobs) + " at a time); the rest:";
  const auto all = parts(t);
  for (auto part = all.begin() + 1; part != all.end(); ++part) {  // after the steps themselves
    const auto& [name, s] = *part;
    if (s >= 0.05) line += std::string(" ") + name + " " + share(s, t.wall_s) + ",";
  }
  line.pop_back();
  return line;
}

}  // namespace tapegrad::lab
