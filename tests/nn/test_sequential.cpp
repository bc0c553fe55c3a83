#include <algorithm>
#include <cmath>
#include <numbers>

#include "nn_support.h"
#include "tapegrad/nn/activation.h"
#include "tapegrad/nn/dropout.h"
#include "tapegrad/nn/init.h"
#include "tapegrad/nn/linear.h"
#include "tapegrad/nn/sequential.h"
#include "tapegrad/ops/cross_entropy.h"
#include "tapegrad/optim/adamw.h"
#include "tapegrad/optim/clip.h"

using namespace tapegrad;
using namespace tapegrad::testing;

namespace {

template <typename T>
std::unique_ptr<nn::Sequential<T>> make_mlp(int64_t in, int64_t hidden, int64_t out, double p) {
  auto mlp = std::make_unique<nn::Sequential<T>>();
  mlp->template emplace_back<nn::Linear<T>>(nn::LinearOptions{.in = in, .out = hidden});
  mlp->template emplace_back<nn::ReLU<T>>();
  mlp->template emplace_back<nn::Dropout<T>>(p);
  mlp->template emplace_back<nn::Linear<T>>(nn::LinearOptions{.in = hidden, .out = out});
  return mlp;
}

// Three interleaved spirals (examples/spiral_mlp.cpp): no linear model separates them.
void spirals(int per_arm, Rng& rng, Tensor<float>& x, std::vector<int32_t>& labels) {
  x = Tensor<float>(Shape{3 * per_arm, 2});
  labels.clear();
  for (int a = 0; a < 3; ++a)
    for (int i = 0; i < per_arm; ++i) {
      const double r = static_cast<double>(i) / per_arm, theta = 4 * r + 2 * std::numbers::pi * a / 3 + 0.2 * rng.normal();
      x.at(a * per_arm + i, 0) = static_cast<float>(r * std::cos(theta));
      x.at(a * per_arm + i, 1) = static_cast<float>(r * std::sin(theta));
      labels.push_back(a);
    }
}

double accuracy(TensorView<const float> logits, const std::vector<int32_t>& labels) {
  int correct = 0;
  for (size_t n = 0; n < labels.size(); ++n) {
    const float* row = logits.data() + 3 * n;
    correct += std::max_element(row, row + 3) - row == labels[n];
  }
  return static_cast<double>(correct) / static_cast<double>(labels.size());
}

}  // namespace

TEST_CASE("sequential: children named 0, 1, ..., and train()/eval() reach dropout", "[nn]") {
  nn::manual_seed(1);
  auto mlp = make_mlp<double>(2, 4, 3, 0.5);
  std::vector<std::string> names;
  for (auto& [name, p] : mlp->named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"0.weight", "0.bias", "3.weight", "3.bias"});
  CHECK_THAT(mlp->summary(), Catch::Contains("(2): Dropout(p=0.5)") && Catch::Contains("(1): ReLU"));

  Tape<double> tape;
  const Tensor<double> x = Tensor<double>::full({8, 4}, 1.0);
  auto& drop = (*mlp)[2];
  Var<double> h = tape.constant(x.view());
  CHECK(drop.forward(h).id() != h.id());  // training: a dropout node
  mlp->eval();
  CHECK_FALSE(drop.is_training());
  CHECK(drop.forward(h).id() == h.id());  // evaluation: the identity
  mlp->train();
  CHECK(drop.is_training());
}

TEST_CASE("gradcheck: sequential MLP (Linear, ReLU, Dropout, Linear)", "[nn][gradcheck]") {
  nn::manual_seed(2);
  auto mlp = make_mlp<double>(3, 5, 2, 0.3);
  Parameter<double> x("x", randn({4, 3}, 3));
  const auto r = gradcheck_module("sequential", *mlp, x, [&](Var<double> v) {
    v.tape().manual_seed(11);  // the same dropout mask for every probe
    return mlp->forward(v);
  });
  require_gradcheck(r, 1e-6);
}

TEST_CASE("sequential: an MLP with ReLU and dropout learns three spirals", "[nn][train]") {
  Rng rng(5);
  Tensor<float> x;
  std::vector<int32_t> labels;
  spirals(100, rng, x, labels);
  nn::manual_seed(7);
  auto mlp = make_mlp<float>(2, 64, 3, 0.1);
  AdamW<float> opt(mlp->parameters(), {.weight_decay = 1e-4});
  Tape<float> tape;
  tape.manual_seed(3);
  double first = 0, last = 0;
  for (int step = 0; step < 400; ++step) {
    tape.clear();
    Var<float> loss = cross_entropy(mlp->forward(tape.constant(x.view())), labels);
    (step == 0 ? first : last) = loss.value()[0];
    opt.zero_grad();
    tape.backward(loss);
    opt.step(1e-2);
  }
  mlp->eval();
  tape.clear();
  const double acc = accuracy(mlp->forward(tape.constant(x.view())).value(), labels);
  INFO("loss " << first << " -> " << last << ", accuracy " << acc);
  CHECK(first == Approx(1.0986).margin(0.05));  // ln 3 at a small init
  CHECK(last < 0.15);
  CHECK(acc >= 0.95);  // 0.983 with these seeds
}

TEST_CASE("sequential: at<M>(i) gives a layer as its own type, clip_grad_norm takes parameters() as it is", "[nn]") {
  nn::manual_seed(1);
  auto mlp = make_mlp<float>(2, 4, 3, 0.5);
  nn::Linear<float>& first = mlp->at<nn::Linear<float>>(0);
  CHECK(first.weight().value().shape() == Shape{4, 2});
  CHECK_THROWS_WITH(mlp->at<nn::Linear<float>>(1), "Sequential::at(1): layer 1 is a ReLU, not the type asked for");
  CHECK_THROWS_WITH(mlp->at<nn::Linear<float>>(9), "Sequential::at(9): it holds 4 layers");
  for (Parameter<float>* p : mlp->parameters()) p->grad().fill(1.f);  // 8 + 4 + 12 + 3 = 27 ones
  CHECK_THAT(clip_grad_norm(mlp->parameters(), 1.0), Catch::Matchers::WithinRel(std::sqrt(27.0), 1e-12));
  CHECK_THAT(grad_norm(mlp->parameters()), Catch::Matchers::WithinRel(1.0, 1e-5));
}

TEST_CASE("sequential: built from a braced list of modules, as torch.nn.Sequential(...), the same as one at a time", "[nn][sequential]") {
  nn::manual_seed(11);
  nn::Sequential<double> listed{nn::Linear<double>(3, 5), nn::Tanh<double>(), nn::Linear<double>(5, 2, false)};
  nn::manual_seed(11);
  nn::Sequential<double> appended;
  appended.emplace_back<nn::Linear<double>>(nn::LinearOptions{.in = 3, .out = 5});
  appended.emplace_back<nn::Tanh<double>>();
  appended.emplace_back<nn::Linear<double>>(nn::LinearOptions{.in = 5, .out = 2, .bias = false});
  REQUIRE(listed.size() == 3);
  const auto names = listed.named_parameters();
  REQUIRE(names.size() == 3);
  CHECK(names[0].first == "0.weight");
  CHECK(names[1].first == "0.bias");
  CHECK(names[2].first == "2.weight");
  CHECK(listed.at<nn::Linear<double>>(2).bias() == nullptr);
  Tape<double> tape;
  const Tensor<double> x = Tensor<double>::full({4, 3}, 0.25);
  const Var<double> a = listed(tape.constant(x.view())), b = appended(tape.constant(x.view()));
  for (int64_t i = 0; i < a.value().numel(); ++i) CHECK(a.value()[i] == b.value()[i]);
}
