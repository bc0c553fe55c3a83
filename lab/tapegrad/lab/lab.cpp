#include "tapegrad/lab/lab.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>

#include "tapegrad/io/file.h"
#include "tapegrad/lab/grid.h"
#include "tapegrad/lm/run_lock.h"
#include "tapegrad/lm/run_log.h"

namespace tapegrad::lab {

namespace {
double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

LabResult run_lab(SweepOptions o, const std::set<std::string>& given, const SweepOptions& defaults,
                  const std::string& this_command, const LabHooks& hooks, const lm::Communicator* comm) {
  const auto t0 = std::chrono::steady_clock::now();
  const SchemaInUse schema;  // the sweep, summary and report read the record schema throughout
  const bool root = comm == nullptr || comm->root();
  name_given(o, given);  // a recipe leaves what the caller names alone
  io::check_path(o.out, "the sweep's folder (out)");
  std::optional<lm::RunLock> lock;  // one writer per sweep folder (rank 0 writes the shared files)
  if (comm == nullptr || comm->rank() == 0) lock.emplace(o.out);
  const bool resumed = std::filesystem::exists(o.out + "/sweep.json");
  o = resolve_sweep(o, given);  // before any output: a refused setting is one line
  verify_sweep_folder(o);       // and a folder whose runs no longer match it
  LabResult result;
  result.total = expand(o).size();  // checks every combination of settings
  if (root) {
    if (hooks.on_warning)
      for (const std::string& w : sweep_warnings(o)) hooks.on_warning(w);
    if (hooks.on_start) hooks.on_start(result.total, o, resumed);
  }
  SweepTiming timing;
  const auto t_sweep = std::chrono::steady_clock::now();
  std::atomic<bool> stop_asked{false};  // polled from the sweep's worker threads
  const auto stop = [&] {
    if (!stop_asked && hooks.stop_requested && hooks.stop_requested()) stop_asked = true;
    return stop_asked.load();
  };
  result.runs = run_sweep(o, hooks.on_run, comm, &timing, hooks.on_tail, stop);
  result.options = o;
  const auto t_report = std::chrono::steady_clock::now();
  timing.prepare_s += seconds(t_sweep - t0);  // the checks before the sweep
  result.stopped = stop_asked || lm::stop_signal() != 0;
  if (!root || result.stopped) return result;  // rank 0 reports; a stopped sweep is continued, not reported

  result.summary = summarize(result.runs, sweep_unigram_loss(o), base_values(o));
  result.summary.jobs = o.jobs;
  result.context = report_context(o, defaults);
  result.context.this_command = this_command;
  result.report_path = o.out + "/report.md";
  if (hooks.draw_plots) {
    // report.md first without its figures and timing: the plots' report.html carries its tables.
    io::write_file_atomic(result.report_path, report_markdown(result.summary, result.runs, result.context));
    result.plot_note = hooks.draw_plots(result.summary);
    result.context.plots = plots_in(o.out);
  }
  const auto now = std::chrono::steady_clock::now();
  result.context.wall_s = seconds(now - t0);
  timing.report_s = seconds(now - t_report);
  timing.wall_s = result.context.wall_s;
  result.context.timing = timing;
  io::write_file_atomic(result.report_path, report_markdown(result.summary, result.runs, result.context));
  return result;
}

}  // namespace tapegrad::lab
