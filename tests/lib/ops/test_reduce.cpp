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
