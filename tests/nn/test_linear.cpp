#include "nn_support.h"
#include "tapegrad/nn/linear.h"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::testing;

TEST_CASE("linear: y = x W^T + b with W stored (out, in)", "[nn]") {
  Linear<double> lin({.in = 2, .out = 3});
  lin.weight().value() = Tensor<double>::from({1, 0, 0, 1, 1, 1}, {3, 2});
  lin.bias()->value() = Tensor<double>::from({10, 20, 30}, {3});
  Tape<double> tape;
  const auto x = Tensor<double>::from({1, 2, 3, 4}, {2, 2});
  Var<double> y = lin.forward(tape.constant(x));
  CHECK(y.shape() == Shape{2, 3});
  CHECK_THAT(y.value(), AllClose<double>({11, 22, 33, 13, 24, 37}));
}

TEST_CASE("gradcheck: linear", "[nn][gradcheck]") {
  const bool bias = GENERATE(true, false);
  const auto [xs, out] = GENERATE(std::pair{Shape{1, 1}, 1}, std::pair{Shape{2, 3, 5}, 7}, std::pair{Shape{4, 3}, 2});
  Linear<double> lin({.in = xs[-1], .out = out, .bias = bias});
  randomize(lin, 1);
  Parameter<double> x("x", randn(xs, 2));
  require_gradcheck(gradcheck_module("linear", lin, x, [&](Var<double> v) { return lin.forward(v); }));
}

TEST_CASE("linear: float32 agrees with float64", "[nn][precision]") {
  require_precisions_agree([](auto&, auto in) { return linear(in[0], in[1], in[2]); },
                           {randn({3, 7, 32}, 3), randn({48, 32}, 4), randn({48}, 5)}, 1e-5);
}

TEST_CASE("linear: mismatched shapes are named", "[nn][errors]") {
  Linear<float> lin({.in = 4, .out = 2});
  Tape<float> tape;
  const Tensor<float> x(Shape{3, 5});
  REQUIRE_THROWS_WITH(lin.forward(tape.constant(x)),
                      "linear: input (3,5) does not end in in_features = 4 of weight (2,4)");
}
