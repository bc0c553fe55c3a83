#include "support.h"
#include "tapegrad/ops/div.h"
#include "tapegrad/ops/sub.h"

using namespace tapegrad;
using namespace tapegrad::testing;

TEST_CASE("sub and div: element-wise and broadcast, either operand the smaller", "[op]") {
  Tape<double> tape;
  const auto x = tape.constant(Tensor<double>::from({1, 2, 3, 4, 5, 6}, {2, 3}));
  const auto w = tape.constant(Tensor<double>::from({2, 4, -1}, {3}));
  CHECK_THAT((x - w).value(), AllClose<double>({-1, -2, 4, 2, 1, 7}));
  CHECK_THAT((w - x).value(), AllClose<double>({1, 2, -4, -2, -1, -7}));
  CHECK_THAT((x / w).value(), AllClose<double>({0.5, 0.5, -3, 2, 1.25, -6}));
  CHECK_THAT((w / x).value(), AllClose<double>({2, 2, -1.0 / 3, 0.5, 0.8, -1.0 / 6}));
  REQUIRE_THROWS_WITH(sub(x, tape.constant(Tensor<double>::zeros({2}))),
                      "sub: shapes (2,3) and (2) do not broadcast (dim -1 is 3 against 2; each pair of trailing dims "
                      "must be equal or one of them 1, as in numpy)");
  REQUIRE_THROWS_WITH(div(x, tape.constant(Tensor<double>::zeros({3, 2}))), Catch::StartsWith("div: shapes (2,3) and (3,2)"));
}

TEST_CASE("gradcheck: sub", "[op][gradcheck]") {
  const auto [sa, sb] = GENERATE(std::pair{Shape{3, 5}, Shape{3, 5}}, std::pair{Shape{2, 3, 5}, Shape{5}},
                                 std::pair{Shape{3}, Shape{4, 3}});
  require_gradcheck(gradcheck("sub", [](Tape<double>&, std::span<const Var<double>> in) { return in[0] - in[1]; },
                              {randn(sa, 1), randn(sb, 2)}));
}

TEST_CASE("gradcheck: div", "[op][gradcheck]") {
  const auto [sa, sb] = GENERATE(std::pair{Shape{3, 5}, Shape{3, 5}}, std::pair{Shape{2, 3, 5}, Shape{5}},
                                 std::pair{Shape{3}, Shape{4, 3}});
  Tensor<double> b = randn(sb, 4);
  for (int64_t i = 0; i < b.numel(); ++i) b[i] += b[i] >= 0 ? 0.5 : -0.5;  // away from 0
  require_gradcheck(gradcheck("div", [](Tape<double>&, std::span<const Var<double>> in) { return in[0] / in[1]; },
                              {randn(sa, 3), b}));
}

TEST_CASE("sub and div: float32 agrees with float64", "[op][precision]") {
  Tensor<double> b = randn({9}, 6);
  for (int64_t i = 0; i < b.numel(); ++i) b[i] += b[i] >= 0 ? 0.5 : -0.5;
  require_precisions_agree([](auto&, auto in) { return sub(in[0], in[1]); }, {randn({5, 7, 9}, 5), randn({9}, 6)}, 1e-6);
  require_precisions_agree([](auto&, auto in) { return div(in[0], in[1]); }, {randn({5, 7, 9}, 5), b}, 1e-6);
}
