#include "support.h"
#include "tapegrad/ops/gelu.h"

using namespace tapegrad;
using namespace tapegrad::testing;

TEST_CASE("gelu: forward matches the tanh formula", "[op]") {
  Tape<double> tape;
  const auto x = Tensor<double>::from({-3, -1, -0.5, 0, 0.5, 1, 2}, {7});
  // 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))), evaluated independently in double.
  REQUIRE_THAT(gelu(tape.constant(x)).value(),
               AllClose<double>({-0.00363739208177299, -0.158808009391723, -0.154285990174856, 0,
                                 0.345714009825144, 0.841191990608277, 1.95459769408777},
                                1e-14, 1e-13));
}

TEST_CASE("gradcheck: gelu", "[op][gradcheck]") {
  const Shape shape = GENERATE(Shape{1}, Shape{7}, Shape{3, 5}, Shape{2, 1, 3});
  auto r = gradcheck("gelu", [](Tape<double>&, std::span<const Var<double>> in) { return gelu(in[0]); },
                     {randn(shape, 1)});
  require_gradcheck(r);
}

TEST_CASE("gelu: float32 agrees with float64", "[op][precision]") {
  require_precisions_agree([](auto&, auto in) { return gelu(in[0]); }, {randn({4, 33}, 2)}, 1e-6);
}
