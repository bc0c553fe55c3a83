#include "support.h"
#include "tapegrad/ops/reshape.h"

using namespace tapegrad;
using namespace tapegrad::testing;

TEST_CASE("reshape: a view of the same elements, with -1 inferred", "[op]") {
  Tape<double> tape;
  const auto x = Tensor<double>::from({1, 2, 3, 4, 5, 6}, {2, 3});
  Var<double> y = reshape(tape.constant(x), {3, -1});
  CHECK(y.shape() == Shape{3, 2});
  CHECK(y.data() == x.data());  // no copy
}

TEST_CASE("transpose: swaps two dims (splitting heads)", "[op]") {
  Tape<double> tape;
  // (B=1, T=2, NH=3, HS=1) -> (1, 3, 2, 1): element [t, h] moves to [h, t].
  const auto x = Tensor<double>::from({1, 2, 3, 4, 5, 6}, {1, 2, 3, 1});
  Var<double> y = transpose(tape.constant(x), 1, 2);
  CHECK(y.shape() == Shape{1, 3, 2, 1});
  CHECK_THAT(y.value(), AllClose<double>({1, 4, 2, 5, 3, 6}));
  CHECK_THAT(transpose(tape.constant(x.view({2, 3})), -1, -2).value(), AllClose<double>({1, 4, 2, 5, 3, 6}));
}

TEST_CASE("gradcheck: reshape", "[op][gradcheck]") {
  require_gradcheck(gradcheck(
      "reshape", [](Tape<double>&, std::span<const Var<double>> in) { return reshape(in[0], {5, -1, 2}); },
      {randn({2, 3, 5}, 60)}));
}

TEST_CASE("gradcheck: transpose", "[op][gradcheck]") {
  const auto [shape, d0, d1] =
      GENERATE(std::tuple{Shape{3, 1}, 0, 1}, std::tuple{Shape{2, 3, 4}, 0, 2}, std::tuple{Shape{2, 5, 3, 2}, 1, 2},
               std::tuple{Shape{1, 2, 3, 4}, -1, 0});
  require_gradcheck(gradcheck(
      "transpose", [&, d0 = d0, d1 = d1](Tape<double>&, std::span<const Var<double>> in) { return transpose(in[0], d0, d1); },
      {randn(shape, 61)}));
}

TEST_CASE("reshape and transpose: float32 agrees with float64", "[op][precision]") {
  require_precisions_agree([](auto&, auto in) { return transpose(reshape(in[0], {2, 4, 3, 5}), 1, 2); },
                           {randn({8, 15}, 62)}, 0);
}

TEST_CASE("reshape: bad target shapes are named", "[op][errors]") {
  Tape<float> tape;
  const Tensor<float> x(Shape{2, 3});
  REQUIRE_THROWS_WITH(reshape(tape.constant(x), {4, 2}),
                      "reshape: cannot reshape (2,3) (6 elements) to (4,2) (8 elements)");
  REQUIRE_THROWS_WITH(reshape(tape.constant(x), {-1, 4}), Catch::Contains("cannot infer -1"));
  REQUIRE_THROWS_WITH(transpose(tape.constant(x), 0, 2), Catch::Contains("dimension 2 out of range for (2,3)"));
}
