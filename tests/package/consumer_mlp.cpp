// An MLP from an installed tapegrad (find_package): Sequential, ReLU and Dropout learn three
// interleaved spirals; the accuracy in eval mode must beat 95 %.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <vector>

#include "tapegrad/nn/activation.h"
#include "tapegrad/nn/dropout.h"
#include "tapegrad/nn/init.h"
#include "tapegrad/nn/linear.h"
#include "tapegrad/nn/sequential.h"
#include "tapegrad/ops.h"
#include "tapegrad/optim/adamw.h"

using namespace tapegrad;

int main() {
  Rng rng(5);
  const int per_arm = 100;
  Tensor<float> x(Shape{3 * per_arm, 2});
  std::vector<int32_t> labels;
  for (int a = 0; a < 3; ++a)
    for (int i = 0; i < per_arm; ++i) {
      const double r = static_cast<double>(i) / per_arm, theta = 4 * r + 2 * std::numbers::pi * a / 3 + 0.2 * rng.normal();
      x.at(a * per_arm + i, 0) = static_cast<float>(r * std::cos(theta));
      x.at(a * per_arm + i, 1) = static_cast<float>(r * std::sin(theta));
      labels.push_back(a);
    }

  nn::manual_seed(7);
  nn::Sequential<float> mlp;
  mlp.emplace_back<nn::Linear<float>>(nn::LinearOptions{.in = 2, .out = 64});
  mlp.emplace_back<nn::ReLU<float>>();
  mlp.emplace_back<nn::Dropout<float>>(0.1);
  mlp.emplace_back<nn::Linear<float>>(nn::LinearOptions{.in = 64, .out = 3});
  AdamW<float> opt(mlp.parameters(), {.weight_decay = 1e-4});
  Tape<float> tape;
  tape.manual_seed(3);
  for (int step = 0; step < 400; ++step) {
    tape.clear();
    Var<float> loss = cross_entropy(mlp.forward(tape.constant(x.view())), labels);
    opt.zero_grad();
    tape.backward(loss);
    opt.step(1e-2);
  }
  mlp.eval();
  tape.clear();
  const Var<float> logits = mlp.forward(tape.constant(x.view()));
  int correct = 0;
  for (size_t n = 0; n < labels.size(); ++n) {
    const float* row = logits.data() + 3 * n;
    correct += std::max_element(row, row + 3) - row == labels[n];
  }
  const double accuracy = static_cast<double>(correct) / static_cast<double>(labels.size());
  std::printf("consumer_mlp: %s\nconsumer_mlp: accuracy %.1f %% on three spirals (must beat 95 %%)\n",
              mlp.summary().c_str(), 100 * accuracy);
  return accuracy > 0.95 ? 0 : 1;
}
