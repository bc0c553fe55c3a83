// A small norm comparison through the installed lab layer alone (find_package(tapegrad),
// tapegrad::lab): two norms, one learning rate, a few steps; then the summary and the report.
#include <cstdio>
#include <filesystem>
#include <string>

#include "tapegrad/lab/grid.h"
#include "tapegrad/lab/report.h"
#include "tapegrad/lab/sweep.h"

int main() {
  using namespace tapegrad;
  lab::SweepOptions o;
  o.base.model.layers = 1, o.base.model.heads = 2, o.base.model.dim = 32, o.base.model.ctx = 16, o.base.batch = 4;
  o.base.steps = 20, o.base.warmup = 2, o.base.eval_iters = 2, o.base.threads = 1;
  o.base.lr = 3e-3;
  lab::set_axis(o, "norm", {"layernorm", "none"});  // an axis: one run per value
  o.evals = 1;
  o.out = (std::filesystem::temp_directory_path() / "tapegrad_consumer_lab").string();
  std::filesystem::remove_all(o.out);
  const auto runs = lab::run_sweep(o, [](const lab::RunRecord&, bool, int, int) {});
  const lab::Summary summary = lab::summarize(runs, lab::sweep_unigram_loss(o));
  const std::string report = lab::report_markdown(summary, runs, {});
  std::filesystem::remove_all(o.out);
  const bool ok = runs.size() == 2 && summary.groups.size() == 2 && report.find("layernorm") != std::string::npos;
  std::printf("%s: lab consumer: %zu runs, %zu groups, val loss %.3f / %.3f\n", ok ? "ok" : "FAIL", runs.size(),
              summary.groups.size(), runs.empty() ? 0.0 : runs[0].final_val_loss,
              runs.size() < 2 ? 0.0 : runs[1].final_val_loss);
  return ok ? 0 : 1;
}
