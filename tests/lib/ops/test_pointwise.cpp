#include <cmath>

#include "support.h"
#include "tapegrad/ops.h"

using namespace tapegrad;
using namespace tapegrad::testing;

namespace {
// Inputs in (0.5, 2.5): inside log's, sqrt's and fractional pow's domain, away from relu's kink.
Tensor<double> positive(Shape shape, uint64_t seed) {
  Tensor<double> t = randn(shape, seed);
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = 0.5 + std::abs(t[i]);
  return t;
}

using Unary = Var<double> (*)(Var<double>);
void require_unary_gradcheck(const char* name, Unary f, const Tensor<double>& x) {
  require_gradcheck(
      gradcheck(name, [f](Tape<double>&, std::span<const Var<double>> in) { return f(in[0]); }, {x}), 1e-6);
}
}  // namespace

TEST_CASE("pointwise: forward values", "[op]") {
  Tape<double> tape;
  const Var<double> x = tape.constant(Tensor<double>::from({-2, -0.5, 0, 1, 4}, {5}));
  CHECK_THAT(neg(x).value(), AllClose<double>({2, 0.5, 0, -1, -4}));
  CHECK_THAT((-x).value(), AllClose<double>({2, 0.5, 0, -1, -4}));
  CHECK_THAT(relu(x).value(), AllClose<double>({0, 0, 0, 1, 4}));
  CHECK_THAT(square(x).value(), AllClose<double>({4, 0.25, 0, 1, 16}));
  CHECK_THAT(exp(x).value(), AllClose<double>({std::exp(-2.0), std::exp(-0.5), 1, std::exp(1.0), std::exp(4.0)}));
  CHECK_THAT(tanh(x).value(), AllClose<double>({std::tanh(-2.0), std::tanh(-0.5), 0, std::tanh(1.0), std::tanh(4.0)}));
  CHECK_THAT(sigmoid(x).value(), AllClose<double>({1 / (1 + std::exp(2.0)), 1 / (1 + std::exp(0.5)), 0.5,
                                                   1 / (1 + std::exp(-1.0)), 1 / (1 + std::exp(-4.0))}));
  const Var<double> p = tape.constant(Tensor<double>::from({0.25, 1, 4}, {3}));
  CHECK_THAT(sqrt(p).value(), AllClose<double>({0.5, 1, 2}));
  CHECK_THAT(log(p).value(), AllClose<double>({std::log(0.25), 0, std::log(4.0)}));
  CHECK_THAT(pow(p, 1.5).value(), AllClose<double>({0.125, 1, 8}));
  CHECK_THAT((p + 1.0).value(), AllClose<double>({1.25, 2, 5}));
  CHECK_THAT((1.0 - p).value(), AllClose<double>({0.75, 0, -3}));
  CHECK_THAT((p - 1.0).value(), AllClose<double>({-0.75, 0, 3}));
  CHECK_THAT((p * 2.0).value(), AllClose<double>({0.5, 2, 8}));
  CHECK_THAT((p / 2.0).value(), AllClose<double>({0.125, 0.5, 2}));
  CHECK_THAT((1.0 / p).value(), AllClose<double>({4, 1, 0.25}));
  // relu's derivative at exactly 0 is 0, as PyTorch's.
  Parameter<double> z("z", Tensor<double>::from({0, 1}, {2}));
  Tape<double> t2;
  t2.backward(relu(t2.param(z)), Tensor<double>::full({2}, 1).view());
  CHECK_THAT(z.grad().view(), AllClose<double>({0, 1}));
  // abs: |x|, and its derivative sign(x) with sign(0) = 0, as PyTorch's.
  Parameter<double> w("w", Tensor<double>::from({-2, 0, 3}, {3}));
  Tape<double> t3;
  const Var<double> aw = abs(t3.param(w));
  CHECK_THAT(aw.value(), AllClose<double>({2, 0, 3}));
  t3.backward(aw, Tensor<double>::from({0.5, 7, -1}, {3}).view());
  CHECK_THAT(w.grad().view(), AllClose<double>({-0.5, 0, -1}));
}

TEST_CASE("gradcheck: neg", "[op][gradcheck]") { require_unary_gradcheck("neg", neg<double>, randn({3, 4}, 1)); }
TEST_CASE("gradcheck: exp", "[op][gradcheck]") { require_unary_gradcheck("exp", exp<double>, randn({3, 4}, 2)); }
TEST_CASE("gradcheck: log", "[op][gradcheck]") { require_unary_gradcheck("log", log<double>, positive({3, 4}, 3)); }
TEST_CASE("gradcheck: tanh", "[op][gradcheck]") { require_unary_gradcheck("tanh", tanh<double>, randn({3, 4}, 4)); }
TEST_CASE("gradcheck: sigmoid", "[op][gradcheck]") {
  require_unary_gradcheck("sigmoid", sigmoid<double>, randn({3, 4}, 5, 3.0));
}
TEST_CASE("gradcheck: relu", "[op][gradcheck]") { require_unary_gradcheck("relu", relu<double>, randn({3, 4}, 6)); }
TEST_CASE("gradcheck: abs", "[op][gradcheck]") { require_unary_gradcheck("abs", abs<double>, randn({3, 4}, 9)); }
TEST_CASE("gradcheck: square", "[op][gradcheck]") {
  require_unary_gradcheck("square", square<double>, randn({3, 4}, 7));
}
TEST_CASE("gradcheck: sqrt", "[op][gradcheck]") { require_unary_gradcheck("sqrt", sqrt<double>, positive({3, 4}, 8)); }
TEST_CASE("gradcheck: pow", "[op][gradcheck]") {
  const double p = GENERATE(2.0, 3.0, -1.0, 0.5, 2.7);
  INFO("p = " << p);
  require_gradcheck(gradcheck(
      "pow", [p](Tape<double>&, std::span<const Var<double>> in) { return pow(in[0], p); }, {positive({3, 4}, 9)}));
}
TEST_CASE("gradcheck: scalar operators", "[op][gradcheck]") {
  require_gradcheck(gradcheck(
      "scalar operators",
      [](Tape<double>&, std::span<const Var<double>> in) { return (2.0 - in[0] * 3.0 + 1.5) / 4.0 + 1.0 / in[0]; },
      {positive({3, 4}, 10)}));
}

TEST_CASE("pointwise: float32 agrees with float64", "[op][precision]") {
  const auto x = randn({7, 33}, 11);
  Tensor<double> px = x;
  for (int64_t i = 0; i < px.numel(); ++i) px[i] = 0.5 + std::abs(px[i]);
  require_precisions_agree([](auto&, auto in) { return exp(in[0]); }, {x}, 1e-6);
  require_precisions_agree([](auto&, auto in) { return tanh(in[0]); }, {x}, 1e-6);
  require_precisions_agree([](auto&, auto in) { return sigmoid(in[0]); }, {x}, 1e-6);
  require_precisions_agree([](auto&, auto in) { return relu(in[0]); }, {x}, 1e-6);
  require_precisions_agree([](auto&, auto in) { return log(in[0]); }, {px}, 1e-6);
  require_precisions_agree([](auto&, auto in) { return sqrt(in[0]); }, {px}, 1e-6);
  require_precisions_agree([](auto&, auto in) { return pow(in[0], 2.5); }, {px}, 1e-5);
}
