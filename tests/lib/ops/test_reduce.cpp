#include "support.h"
#include "tapegrad/ops/reduce.h"

using namespace tapegrad;
using namespace tapegrad::testing;

TEST_CASE("sum and mean: forward to a scalar", "[op]") {
  Tape<double> tape;
  const auto x = Tensor<double>::from({1, 2, 3, 4, 5, 6}, {2, 3});
  Var<double> s = sum(tape.constant(x));
  CHECK(s.shape() == Shape{});
  CHECK_THAT(s.value(), AllClose<double>({21}));
  CHECK_THAT(mean(tape.constant(x)).value(), AllClose<double>({3.5}));
}

TEST_CASE("gradcheck: sum", "[op][gradcheck]") {
  const Shape shape = GENERATE(Shape{1}, Shape{3, 5, 2});
  require_gradcheck(gradcheck("sum", [](Tape<double>&, std::span<const Var<double>> in) { return sum(in[0]); },
                              {randn(shape, 50)}));
}

TEST_CASE("gradcheck: mean", "[op][gradcheck]") {
  const Shape shape = GENERATE(Shape{1}, Shape{3, 5, 2});
  require_gradcheck(gradcheck("mean", [](Tape<double>&, std::span<const Var<double>> in) { return mean(in[0]); },
                              {randn(shape, 51)}));
}

TEST_CASE("sum and mean: float32 agrees with float64", "[op][precision]") {
  require_precisions_agree([](auto&, auto in) { return mean(in[0]); }, {randn({100, 100}, 52)}, 1e-6);
  require_precisions_agree([](auto&, auto in) { return sum(in[0]); }, {randn({100, 100}, 53)}, 1e-6);
}

TEST_CASE("sum, mean and max over a dim: values, keepdim, negative dims", "[op]") {
  Tape<double> tape;
  const auto x = tape.constant(Tensor<double>::from({1, 5, 3, 4, 2, 6}, {2, 3}));
  CHECK(sum(x, 0).shape() == Shape{3});
  CHECK_THAT(sum(x, 0).value(), AllClose<double>({5, 7, 9}));
  CHECK(sum(x, 1, true).shape() == (Shape{2, 1}));
  CHECK_THAT(sum(x, -1, true).value(), AllClose<double>({9, 12}));
  CHECK_THAT(mean(x, 1).value(), AllClose<double>({3, 4}));
  CHECK_THAT(max(x, 1).value(), AllClose<double>({5, 6}));
  CHECK_THAT(max(x, 0).value(), AllClose<double>({4, 5, 6}));
  REQUIRE_THROWS_WITH(sum(x, 2), Catch::Contains("out of range"));
  // max: the gradient goes to the first maximum only.
  Parameter<double> t("t", Tensor<double>::from({2, 7, 7, 1}, {1, 4}));
  Tape<double> t2;
  t2.backward(max(t2.param(t), 1), Tensor<double>::full({1}, 1).view());
  CHECK_THAT(t.grad().view(), AllClose<double>({0, 1, 0, 0}));
}

TEST_CASE("gradcheck: sum over a dim", "[op][gradcheck]") {
  const int dim = GENERATE(0, 1, -1);
  const bool keepdim = GENERATE(false, true);
  require_gradcheck(gradcheck(
      "sum(dim)", [=](Tape<double>&, std::span<const Var<double>> in) { return sum(in[0], dim, keepdim); },
      {randn({2, 3, 4}, 60)}));
}

TEST_CASE("gradcheck: mean over a dim", "[op][gradcheck]") {
  const int dim = GENERATE(0, 1, -1);
  require_gradcheck(gradcheck(
      "mean(dim)", [=](Tape<double>&, std::span<const Var<double>> in) { return mean(in[0], dim, true); },
      {randn({2, 3, 4}, 61)}));
}

TEST_CASE("gradcheck: max over a dim", "[op][gradcheck]") {
  const int dim = GENERATE(0, 1, -1);
  require_gradcheck(gradcheck(
      "max(dim)", [=](Tape<double>&, std::span<const Var<double>> in) { return max(in[0], dim); },
      {randn({2, 3, 4}, 62)}));
}

TEST_CASE("reductions over a dim: float32 agrees with float64", "[op][precision]") {
  require_precisions_agree([](auto&, auto in) { return sum(in[0], 1); }, {randn({6, 50, 7}, 63)}, 1e-6);
  require_precisions_agree([](auto&, auto in) { return mean(in[0], 0); }, {randn({6, 50, 7}, 64)}, 1e-6);
  require_precisions_agree([](auto&, auto in) { return max(in[0], -1); }, {randn({6, 50, 7}, 65)}, 1e-6);
}
