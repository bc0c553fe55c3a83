#include "support.h"
#include "tapegrad/ops/softmax.h"

using namespace tapegrad;
using namespace tapegrad::testing;

TEST_CASE("softmax: forward values, and invariance to a shift of the row", "[op]") {
  Tape<double> tape;
  // Row 2 is row 1 + 999: the max subtraction must make it identical (and finite).
  const auto x = Tensor<double>::from({1, 2, 3, 1000, 1001, 1002}, {2, 3});
  const std::vector<double> p{0.0900305731703805, 0.244728471054798, 0.665240955774822};
  std::vector<double> both = p;
  both.insert(both.end(), p.begin(), p.end());
  REQUIRE_THAT(softmax(tape.constant(x)).value(), AllClose<double>(both, 1e-15, 1e-14));
}

TEST_CASE("gradcheck: softmax", "[op][gradcheck]") {
  const Shape shape = GENERATE(Shape{1}, Shape{5}, Shape{3, 7}, Shape{2, 3, 1}, Shape{2, 2, 3, 4});
  auto r = gradcheck("softmax", [](Tape<double>&, std::span<const Var<double>> in) { return softmax(in[0]); },
                     {randn(shape, 5)});
  require_gradcheck(r);
}

TEST_CASE("softmax: float32 agrees with float64", "[op][precision]") {
  require_precisions_agree([](auto&, auto in) { return softmax(in[0]); }, {randn({6, 65}, 6)}, 1e-6);
}

TEST_CASE("softmax: a scalar input is rejected with its shape", "[op][errors]") {
  Tape<float> tape;
  const Tensor<float> x(Shape{});
  REQUIRE_THROWS_WITH(softmax(tape.constant(x)), Catch::Contains("softmax") && Catch::Contains("()"));
}
