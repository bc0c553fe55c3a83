// A sweep that SIGKILLs itself right after one of a run's files is written: the test of the
// sweep's write order (kill_at_boundary.sh). The same four tiny runs every time.
//   sweep_killer OUT BOUNDARY N   BOUNDARY: curve, record or proof (after the Nth run's file), or
//                                 none (no kill). Prints "trained ID" / "skipped ID" per run.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tapegrad/lab/grid.h"
#include "tapegrad/lab/sweep.h"

using namespace tapegrad::lab;

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: sweep_killer OUT curve|record|proof|none N\n");
    return 2;
  }
  const std::string boundary = argv[2];
  const int kill_at = std::atoi(argv[3]);
  SweepOptions o;
  o.base.model.dim = 16, o.base.model.heads = 2, o.base.model.ctx = 16, o.base.batch = 2, o.base.steps = 6, o.base.warmup = 2;
  o.base.eval_iters = 1, o.base.threads = 1, o.base.model.layers = 1, o.base.seed = 1;
  o.evals = 1, o.jobs = 1, o.out = argv[1];
  set_axis(o, "norm", {"layernorm", "none"});
  set_axis(o, "lr", {1e-3, 3e-3});
  int runs = 0;
  set_write_boundary_hook([&](const std::string& file, const std::string&) {
    if (file == "curve") ++runs;
    if (file == boundary && runs == kill_at) std::raise(SIGKILL);
  });
  run_sweep(o, [](const RunRecord& r, bool skipped, int, int) {
    std::printf("%s %s\n", skipped ? "skipped" : "trained", r.spec.id().c_str());
  });
  return 0;
}
