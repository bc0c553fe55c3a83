// spiral_mlp: the smallest end-to-end use of the engine. A two-layer MLP written directly with
// tapegrad's primitive ops learns to tell three interleaved spirals apart (a classic task a
// linear model cannot solve), trained with AdamW. Loss and accuracy are printed as it learns.
//
//   build/examples/spiral_mlp --steps 600 --hidden 64 --seed 1
#include <CLI/CLI.hpp>
#include <cmath>
#include <algorithm>
#include <cstdio>
#include <numbers>
#include <vector>

#include "tapegrad/cli/cli.h"
#include "tapegrad/ops.h"
#include "tapegrad/optim/adamw.h"
#include "tapegrad/threads.h"

using namespace tapegrad;

namespace {

struct Dataset {
  Tensor<float> x;              // (N, 2) points
  std::vector<int32_t> labels;  // (N) arm index
};

// N points per arm on `arms` spirals with Gaussian jitter.
Dataset make_spirals(int per_arm, int arms, Rng& rng) {
  Dataset d{Tensor<float>(Shape{per_arm * arms, 2}), {}};
  for (int a = 0; a < arms; ++a)
    for (int i = 0; i < per_arm; ++i) {
      const double r = static_cast<double>(i) / per_arm;
      const double theta = 4.0 * r + 2.0 * std::numbers::pi * a / arms + 0.2 * rng.normal();
      const int n = a * per_arm + i;
      d.x.at(n, 0) = static_cast<float>(r * std::cos(theta));
      d.x.at(n, 1) = static_cast<float>(r * std::sin(theta));
      d.labels.push_back(a);
    }
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train a two-layer MLP on three spirals with tapegrad's primitive ops", "spiral_mlp"};
  int steps = 600, hidden = 64, seed = 1, threads = 0;
  double lr = 1e-2;
  app.add_option("--steps", steps, "training steps (full batch)")->check(cli::positive());
  app.add_option("--hidden", hidden, "hidden units")->check(cli::in_range(1, 65536));
  app.add_option("--lr", lr, "AdamW learning rate")->check(cli::positive());
  app.add_option("--seed", seed, "random seed")->check(cli::non_negative());
  app.add_option("--threads", threads, "threads (0: one per core)")->check(cli::in_range(0, 1024));
  return cli::run_cli(app, argc, argv, [&] {
    set_num_threads(threads);

    Rng rng(static_cast<uint64_t>(seed));
    const Dataset data = make_spirals(100, 3, rng);
    // Weights stored (out, in) as torch.nn.Linear; init N(0, 1/fan_in).
    Parameter<float> w1("w1", Tensor<float>::randn({hidden, 2}, rng, 1.0 / std::sqrt(2.0)));
    Parameter<float> b1("b1", Tensor<float>(Shape{hidden}));
    Parameter<float> w2("w2", Tensor<float>::randn({3, hidden}, rng, 1.0 / std::sqrt(hidden)));
    Parameter<float> b2("b2", Tensor<float>(Shape{3}));
    AdamW<float> opt({&w1, &b1, &w2, &b2}, {.weight_decay = 1e-4});

    Tape<float> tape;
    const int report_every = std::max(1, steps / 10);  // 10 lines, or every step of a shorter run
    std::printf("step   loss     accuracy\n");
    for (int step = 0; step <= steps; ++step) {
      tape.clear();
      Var<float> x = tape.constant(data.x);
      Var<float> h = gelu(add(matmul(x, tape.param(w1), Trans::kNo, Trans::kYes), tape.param(b1)));
      Var<float> logits = add(matmul(h, tape.param(w2), Trans::kNo, Trans::kYes), tape.param(b2));
      Var<float> loss = cross_entropy(logits, data.labels);
      if (step % report_every == 0 || step == steps) {
        int correct = 0;
        const float* z = logits.data();
        for (size_t n = 0; n < data.labels.size(); ++n) {
          const float* row = z + 3 * n;
          const int pred = static_cast<int>(std::max_element(row, row + 3) - row);
          correct += pred == data.labels[n];
        }
        std::printf("%4d   %.4f   %5.1f%%\n", step, loss.value()[0], 100.0 * correct / data.labels.size());
      }
      if (step == steps) break;
      opt.zero_grad();
      tape.backward(loss);
      opt.step(lr);
    }
    return 0;
  });
}
