#include "support.h"
#include "tapegrad/ops/mul.h"

using namespace tapegrad;
using namespace tapegrad::testing;

TEST_CASE("mul: element-wise and broadcast", "[op]") {
  Tape<double> tape;
  const auto x = Tensor<double>::from({1, 2, 3, 4, 5, 6}, {2, 3});
  const auto w = Tensor<double>::from({2, 0, -1}, {3});
  CHECK_THAT(mul(tape.constant(x), tape.constant(x)).value(), AllClose<double>({1, 4, 9, 16, 25, 36}));
  CHECK_THAT((tape.constant(x) * tape.constant(w)).value(), AllClose<double>({2, 0, -3, 8, 0, -6}));
}

TEST_CASE("mul: a value used twice (x * x) collects both gradient contributions", "[op][tape]") {
  Tape<double> tape;
  Parameter<double> x("x", Tensor<double>::from({3, -2}, {2}));
  Var<double> v = tape.param(x);
  const auto ones = Tensor<double>::full({2}, 1);
  tape.backward(mul(v, v), ones.view());
  CHECK_THAT(x.grad().view(), AllClose<double>({6, -4}));  // d(x^2)/dx = 2x
}

TEST_CASE("gradcheck: mul", "[op][gradcheck]") {
  const auto [sa, sb] = GENERATE(std::pair{Shape{1}, Shape{1}}, std::pair{Shape{3, 5}, Shape{3, 5}},
                                 std::pair{Shape{2, 3, 5}, Shape{5}}, std::pair{Shape{3}, Shape{4, 3}});
  auto r = gradcheck("mul", [](Tape<double>&, std::span<const Var<double>> in) { return mul(in[0], in[1]); },
                     {randn(sa, 30), randn(sb, 31)});
  require_gradcheck(r);
}

TEST_CASE("mul: float32 agrees with float64", "[op][precision]") {
  require_precisions_agree([](auto&, auto in) { return mul(in[0], in[1]); }, {randn({5, 7, 9}, 32), randn({9}, 33)},
                           1e-6);
}
