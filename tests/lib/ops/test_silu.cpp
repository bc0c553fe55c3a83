#include "support.h"
#include "tapegrad/ops/silu.h"

using namespace tapegrad;
using namespace tapegrad::testing;

TEST_CASE("silu: forward is x * sigmoid(x)", "[op]") {
  Tape<double> tape;
  const auto x = Tensor<double>::from({-3, -1, -0.5, 0, 0.5, 1, 2}, {7});
  REQUIRE_THAT(silu(tape.constant(x)).value(),
               AllClose<double>({-0.1422776195327, -0.268941421369995, -0.188770334399073, 0,
                                 0.311229665600927, 0.731058578630005, 1.76159415595576},
                                1e-13, 1e-12));
}

TEST_CASE("silu: large magnitudes neither overflow nor produce NaN", "[op]") {
  Tape<float> tape;
  const auto x = Tensor<float>::from({-1000.f, 1000.f}, {2});
  REQUIRE_THAT(silu(tape.constant(x)).value(), AllClose<float>({0.0, 1000.0}, 1e-6, 1e-6));
}

TEST_CASE("gradcheck: silu", "[op][gradcheck]") {
  const Shape shape = GENERATE(Shape{1}, Shape{9}, Shape{3, 5}, Shape{2, 1, 3});
  auto r = gradcheck("silu", [](Tape<double>&, std::span<const Var<double>> in) { return silu(in[0]); },
                     {randn(shape, 3)});
  require_gradcheck(r);
}

TEST_CASE("silu: float32 agrees with float64", "[op][precision]") {
  require_precisions_agree([](auto&, auto in) { return silu(in[0]); }, {randn({4, 33}, 4)}, 1e-6);
}
