// seed_walkthrough: prints the data flow of the explanation tapegrad grew from, from a Chinese
// sentence to a pre-norm block, each stage computed with tapegrad's modules.
//   build/examples/seed_walkthrough [--seed N]
#include <CLI/CLI.hpp>
#include <cstdio>

#include "tapegrad/cli/cli.h"
#include "tapegrad/nn/norm.h"
#include "walkthrough.h"

int main(int argc, char** argv) {
  CLI::App app{"Walk through tokens -> embeddings -> LayerNorm/RMSNorm -> a pre-norm block", "seed_walkthrough"};
  uint64_t seed = 7;
  std::string norm;
  app.add_option("--seed", seed, "seed of the block's random weights")->check(tapegrad::cli::unsigned_integer());
  app.add_option("--norm", norm, "the norm of the regulator section (default: every registered norm, and none)")
      ->check(CLI::IsMember(tapegrad::nn::norm_names()));
  return tapegrad::cli::run_cli(app, argc, argv, [&] {
    const auto w = tapegrad::walkthrough::run_seed_walkthrough(seed, norm);
    std::fputs(tapegrad::walkthrough::render(w).c_str(), stdout);
    return 0;
  });
}
