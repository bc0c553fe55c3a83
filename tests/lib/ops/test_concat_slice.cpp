#include "support.h"
#include "tapegrad/ops/concat.h"
#include "tapegrad/ops/reshape.h"
#include "tapegrad/ops/slice.h"

using namespace tapegrad;
using namespace tapegrad::testing;

TEST_CASE("concat, slice and permute: values and errors", "[op]") {
  Tape<double> tape;
  const auto a = tape.constant(Tensor<double>::from({1, 2, 3, 4}, {2, 2}));
  const auto b = tape.constant(Tensor<double>::from({5, 6}, {2, 1}));
  const auto c = concat({a, b}, 1);
  CHECK(c.shape() == (Shape{2, 3}));
  CHECK_THAT(c.value(), AllClose<double>({1, 2, 5, 3, 4, 6}));
  CHECK_THAT(concat({a, a}, 0).value(), AllClose<double>({1, 2, 3, 4, 1, 2, 3, 4}));
  REQUIRE_THROWS_WITH(concat({a, b}, 0), "concat: tensor 1 has shape (2,1), tensor 0 has (2,2) (all dims but 0 must agree)");

  CHECK_THAT(slice(c, 1, 1, 3).value(), AllClose<double>({2, 5, 4, 6}));
  CHECK_THAT(slice(c, -1, -1, 100).value(), AllClose<double>({5, 6}));  // Python-style, clamped
  CHECK(slice(c, 0, 1, 1).shape() == (Shape{0, 3}));

  const auto x = tape.constant(Tensor<double>::from({0, 1, 2, 3, 4, 5}, {1, 2, 3}));
  const auto p = permute(x, {2, 0, 1});
  CHECK(p.shape() == (Shape{3, 1, 2}));
  CHECK_THAT(p.value(), AllClose<double>({0, 3, 1, 4, 2, 5}));
  REQUIRE_THROWS_WITH(permute(x, {0, 0, 1}), "permute: dim 0 appears twice for (1,2,3)");
  REQUIRE_THROWS_WITH(permute(x, {0, 1}), "permute: 2 dims given for (1,2,3) (rank 3)");
}

TEST_CASE("gradcheck: concat", "[op][gradcheck]") {
  const int dim = GENERATE(0, 1, -1);
  Shape sb{2, 3, 4};
  sb[dim] = 2;
  require_gradcheck(gradcheck(
      "concat", [=](Tape<double>&, std::span<const Var<double>> in) { return concat({in[0], in[1], in[0]}, dim); },
      {randn({2, 3, 4}, 1), randn(sb, 2)}));
}

TEST_CASE("gradcheck: slice", "[op][gradcheck]") {
  const int dim = GENERATE(0, 1, 2);
  require_gradcheck(gradcheck(
      "slice", [=](Tape<double>&, std::span<const Var<double>> in) { return slice(in[0], dim, 1, 3); },
      {randn({3, 4, 5}, 3)}));
}

TEST_CASE("gradcheck: permute", "[op][gradcheck]") {
  require_gradcheck(gradcheck(
      "permute", [](Tape<double>&, std::span<const Var<double>> in) { return permute(in[0], {3, 1, 0, 2}); },
      {randn({2, 3, 4, 5}, 4)}));
  require_gradcheck(gradcheck(
      "transpose", [](Tape<double>&, std::span<const Var<double>> in) { return transpose(in[0], 0, 1); },
      {randn({3, 4}, 5)}));
}

TEST_CASE("concat, slice and permute: float32 agrees with float64", "[op][precision]") {
  require_precisions_agree([](auto&, auto in) { return concat({in[0], in[1]}, 1); }, {randn({4, 3}, 6), randn({4, 5}, 7)},
                           0);
  require_precisions_agree([](auto&, auto in) { return slice(in[0], 0, 1, 3); }, {randn({4, 3}, 8)}, 0);
  require_precisions_agree([](auto&, auto in) { return permute(in[0], {1, 2, 0}); }, {randn({4, 3, 2}, 9)}, 0);
}
