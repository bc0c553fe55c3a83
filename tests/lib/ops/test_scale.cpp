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
