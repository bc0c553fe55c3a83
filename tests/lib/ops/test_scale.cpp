#include "support.h"
#include "tapegrad/ops/scale.h"

using namespace tapegrad;
using namespace tapegrad::testing;

TEST_CASE("scale: forward", "[op]") {
  Tape<double> tape;
  const auto x = Tensor<double>::from({1, -2, 4}, {3});
  CHECK_THAT(scale(tape.constant(x), 0.25).value(), AllClose<double>({0.25, -0.5, 1}));
  CHECK_THAT((-3.0 * tape.constant(x)).value(), AllClose<double>({-3, 6, -12}));
}

TEST_CASE("gradcheck: scale", "[op][gradcheck]") {
  const Shape shape = GENERATE(Shape{1}, Shape{4, 3});
  auto r = gradcheck("scale", [](Tape<double>&, std::span<const Var<double>> in) { return scale(in[0], -1.7); },
                     {randn(shape, 40)});
  require_gradcheck(r);
}

TEST_CASE("scale: float32 agrees with float64", "[op][precision]") {
  require_precisions_agree([](auto&, auto in) { return scale(in[0], 0.125); }, {randn({64}, 41)}, 1e-7);
}

TEST_CASE("scale: by a learned scalar, forward", "[op]") {
  Tape<double> tape;
  const Var<double> y = scale(tape.constant(Tensor<double>::from({1, -2, 4}, {3})), tape.constant(Tensor<double>::from({-0.5}, {1})));
  CHECK_THAT(y.value(), AllClose<double>({-0.5, 1, -2}));
  REQUIRE_THROWS_WITH(scale(tape.constant(Tensor<double>::from({1, 2}, {2})), tape.constant(Tensor<double>::from({1, 2}, {2}))),
                      Catch::Contains("scale: the scale (2) must be (1)"));
}

TEST_CASE("gradcheck: scale by a learned scalar", "[op][gradcheck]") {
  // ds = sum x dy: a reduction over every element, checked at a shape with a tail (3 x 37).
  const Shape shape = GENERATE(Shape{1}, Shape{3, 37});
  auto r = gradcheck("scale by a learned scalar",
                     [](Tape<double>&, std::span<const Var<double>> in) { return scale(in[0], in[1]); },
                     {randn(shape, 42), Tensor<double>::from({1.3}, {1})});
  require_gradcheck(r);
}

TEST_CASE("scale by a learned scalar: float32 agrees with float64", "[op][precision]") {
  require_precisions_agree([](auto&, auto in) { return scale(in[0], in[1]); }, {randn({200}, 43), randn({1}, 44)}, 1e-6);
}
