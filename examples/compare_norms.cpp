// compare_norms: the norm-stability lab. Trains the same tiny decoder with every registered norm
// (and none) x placement x learning rate x seed x layers x warmup x any other training setting
// given several values, instrumented, and writes runs.csv, curves.csv, report.md and plots to --out.
//
//   build/examples/compare_norms                                    # the default sweep (~5 min, 2 cores)
//   build/examples/compare_norms --lr 1e-3 3e-3 1e-2 --seed 1 2 3 --layers 4 8 --out runs/deep
//   build/examples/compare_norms --placement pre post --warmup 0 100 --data ../shared/data/tinyshakespeare.txt
//   build/examples/compare_norms --dim 32 64 --qk-norm none rmsnorm --out runs/qk
//   build/examples/compare_norms --out runs/qk                      # continue that grid
//   build/examples/compare_norms --out runs/qk --seed 3             # grow it: one more seed
//
// Same data, initialisation seed and batches for every norm (paired comparison). The grid lives
// in --out/sweep.json (lab/grid.h); runs already recorded are skipped, so an interrupted sweep
// continues where it stopped, and the report always covers every run of the grid.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "tapegrad/cli/axis_flags.h"
#include "tapegrad/cli/cli.h"
#include "tapegrad/lab/grid.h"
#include "tapegrad/lab/lab.h"
#include "tapegrad/cli/process.h"
#include "tapegrad/lab/report.h"
#include "tapegrad/lab/sweep.h"
#include "tapegrad/lab/sweep_settings.h"
#include "tapegrad/lm/communicator.h"
#include "tapegrad/lm/run_log.h"
#include "tapegrad/lm/usage_error.h"
#include "tapegrad/text/lexical.h"
#include "tapegrad/threads.h"
#include "tapegrad/cli/train_flags.h"

using namespace tapegrad;
using namespace tapegrad::lab;
namespace fs = std::filesystem;

namespace {

std::string self_dir() {
  std::error_code ec;
  const auto exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

// plot_lab.py's exit status when its interpreter has no matplotlib (NO_MATPLOTLIB there).
constexpr int kNoMatplotlib = 3;

// The Pythons tried for the plots, in order: the one asked for, then /usr/bin/python3 (Debian's
// packages are seen by it, and it may not be the python3 first on PATH), then python3.
std::vector<std::string> plot_interpreters(const std::string& preferred) {
  std::vector<std::string> candidates;
  if (!preferred.empty()) candidates.push_back(preferred);
  candidates.insert(candidates.end(), {"/usr/bin/python3", "python3"});
  return candidates;
}

// The first interpreter with plot_lab.py, started while the sweep's last runs train: it imports
// matplotlib on the core they leave free (a third of a second, a third of the plots' time) and
// then waits for its arguments on standard input (--args-on-stdin there).
std::optional<cli::StartedProcess> start_plotter(const std::string& preferred, const std::string& script) {
  if (!fs::exists(script)) return std::nullopt;
  return cli::StartedProcess::start({plot_interpreters(preferred)[0], script, "--args-on-stdin"},
                                    cli::ChildOutput::kToStderr);
}

// Draws the plots with the first Python that has matplotlib: `started` if there is one, then the
// other interpreters, each started now. The script itself is the probe. Returns a note when no
// plots were drawn.
std::string draw_plots(const std::string& preferred, const std::string& script, double reference_lr,
                       const std::string& out, std::optional<cli::StartedProcess>& started) {
  if (!fs::exists(script)) return "plots skipped: " + script + " is missing";
  const std::vector<std::string> args = {"--reference-lr", text::exact_decimal(reference_lr), "--", out};
  const auto settled = [](int status) { return status != kNoMatplotlib && status != -1 && status != 127; };
  std::vector<std::string> candidates = plot_interpreters(preferred);
  if (started) {
    std::string packet;  // each argument ended by a NUL, as the kernel hands argv over
    for (const std::string& a : args) packet += a + '\0';
    const bool sent = started->send(packet);
    const int status = started->finish();
    started.reset();
    if (sent && status == 0) return "";
    if (status != 0 && settled(status)) return "plots failed (see the messages above)";
    if (status != 0) candidates.erase(candidates.begin());  // no matplotlib there
  }
  for (const auto& py : candidates) {
    std::vector<std::string> argv = {py, script};
    argv.insert(argv.end(), args.begin(), args.end());
    const int status = cli::run_process(argv, cli::ChildOutput::kToStderr);
    if (status == 0) return "";
    if (settled(status)) return "plots failed (see the messages above)";
  }
  return "plots skipped: no Python with matplotlib (Debian: apt-get install python3-matplotlib)";
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const std::unique_ptr<lm::Communicator> processes = cli::start_communicator(&argc, &argv);
  const lm::Communicator& comm = *processes;
  CLI::App app{"The norm-stability lab: every registered norm (and none), across learning rates", "compare_norms"};
  SweepOptions o = default_sweep(comm.local_size());  // ranks on one machine share its cores
  const SweepOptions defaults = o;
  AxisFlags axis_flags(app, o);  // every training setting: one value, or several (an axis)
  // The sweep's own settings (lab/sweep_settings.h), as given: a value, or a switch --key / --no-key.
  std::map<std::string, std::string> sweep_flags;
  std::map<std::string, bool> sweep_switches;
  for (const SweepSetting& s : sweep_settings()) {
    const std::string former = s.former.empty() ? "" : ",--" + s.former;
    if (s.type_name().empty()) {
      sweep_switches[s.key] = sweep_setting_json(s, o).get<bool>();
      app.add_flag("--" + s.key + former + ",!--no-" + s.key + (s.former.empty() ? "" : ",!--no-" + s.former),
                   sweep_switches[s.key], s.help)->group("Sweep");
    } else {
      const nlohmann::json now = sweep_setting_json(s, o);
      app.add_option("--" + s.key + former, sweep_flags[s.key], s.help)
          ->default_str(now.is_string() ? now.get<std::string>() : setting_text(now))->type_name(s.type_name())->group("Sweep");
    }
  }

  return cli::run_cli(app, argc, argv, [&] {
    const auto t0 = std::chrono::steady_clock::now();
    const std::set<std::string> given = axis_flags.apply();  // checks each value as train_lm would
    for (const SweepSetting& s : sweep_settings()) {
      if (!given.count(s.key)) continue;
      if (s.type_name().empty()) set_sweep_setting(s, o, nlohmann::json(sweep_switches[s.key]), "--");
      else set_sweep_setting(s, o, sweep_flags[s.key], "--");
    }
    const bool plot = o.plots;
    const std::string& python = o.python;
    lm::install_stop_handlers();
    std::string this_command = "compare_norms";
    for (int i = 1; i < argc; ++i) this_command += " " + text::shell_quote(argv[i]);
    const std::string who = comm.distributed() ? "rank " + std::to_string(comm.rank()) + " " : "";
    int trained = 0;  // runs this process trained, for the ETA: the mean wall time per trained run so far
    int jobs = o.jobs;
    std::optional<cli::StartedProcess> plotter;  // started when a core is free, in the sweep's last runs
    LabHooks hooks;
    hooks.on_warning = [](const std::string& w) {
      std::fprintf(stderr, "compare_norms: warning: %s\n", lm::render_settings(w, "--").c_str());
    };
    hooks.on_start = [&](size_t total, const SweepOptions& grid, bool resumed) {
      jobs = grid.jobs;
      std::fprintf(stderr, "compare_norms: %zu runs (%s), %d at a time%s -> %s%s\n", total, grid_shape(grid).c_str(),
                   grid.jobs, comm.distributed() ? (" on each of " + std::to_string(comm.size()) + " ranks").c_str() : "",
                   grid.out.c_str(),
                   resumed ? (" (the grid in " + grid.out + "/sweep.json, grown by this command)").c_str() : "");
    };
    hooks.on_run = [&](const RunRecord& r, bool skipped, int done, int n) {
      trained += !skipped;
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const int left = n - done;
      char eta[96] = "";
      if (!skipped && trained > 0 && left > 0) {
        // Trained runs so far took `elapsed` in all, `jobs` at a time: the rest take as long each.
        const double s = elapsed / trained * left;
        std::snprintf(eta, sizeof eta, "  | %d left (%d running), ETA %d:%02d", left, std::min(left, jobs),
                      static_cast<int>(s) / 60, static_cast<int>(s) % 60);
      }
      char status[160];
      if (r.diverged)
        std::snprintf(status, sizeof status, "DIVERGED at step %lld (%s, %s)", static_cast<long long>(r.divergence_step),
                      r.divergence_cause.c_str(), r.divergence_quantity.c_str());
      else
        std::snprintf(status, sizeof status, "val %.3f, peak residual RMS %.2f, attention logit %.1f", r.final_val_loss,
                      r.peak_residual_rms, r.peak_attention_logit);
      std::fprintf(stderr, "%s[%3d/%d] %-40s %s%s%s\n", who.c_str(), done, n, r.spec.id().c_str(), status,
                   skipped ? "  (done earlier)" : (" " + std::to_string(static_cast<int>(r.wall_s + 0.5)) + " s").c_str(), eta);
    };
    hooks.on_tail = [&] {
      if (plot && comm.root()) plotter = start_plotter(python, self_dir() + "/plot_lab.py");
    };
    if (plot)
      hooks.draw_plots = [&](const Summary& summary) {
        return draw_plots(python, self_dir() + "/plot_lab.py", summary.reference_lr, o.out, plotter);
      };
    const LabResult lab = run_lab(o, given, defaults, this_command, hooks, &comm);
    if (!comm.root()) return lm::stop_signal() ? 128 + lm::stop_signal() : 0;  // rank 0 reports
    if (lab.stopped) {
      std::fprintf(stderr, "interrupted: %zu of %zu runs are in %s/runs.csv; run the same command again to continue\n",
                   lab.runs.size(), lab.total, o.out.c_str());
      return 128 + lm::stop_signal();
    }
    std::printf("\n%s\n", console_summary(lab.summary).c_str());
    std::printf("report:  %s%s\n", lab.report_path.c_str(),
                fs::exists(o.out + "/report.html") ? (" and " + o.out + "/report.html (interactive)").c_str() : "");
    std::printf("data:    %s/runs.csv, %s/curves.csv\n", o.out.c_str(), o.out.c_str());
    if (!lab.context.plots.empty()) {
      std::vector<std::string> files;
      for (const auto& [file, caption] : lab.context.plots) files.push_back(o.out + "/" + file);
      std::printf("plots:   %s\n", joined(files).c_str());
    }
    if (!lab.plot_note.empty()) std::printf("%s\n", lab.plot_note.c_str());
    std::printf("%s\n", timing_line(lab.context.timing).c_str());
    return 0;
  }, &comm);
}
