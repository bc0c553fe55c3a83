#include "support.h"
#include "tapegrad/ops/add.h"

using namespace tapegrad;
using namespace tapegrad::testing;

TEST_CASE("add: element-wise and with a broadcast bias", "[op]") {
  Tape<double> tape;
  const auto x = Tensor<double>::from({1, 2, 3, 4, 5, 6}, {2, 3});
  const auto bias = Tensor<double>::from({10, 20, 30}, {3});
  CHECK_THAT(add(tape.constant(x), tape.constant(x)).value(), AllClose<double>({2, 4, 6, 8, 10, 12}));
  CHECK_THAT((tape.constant(x) + tape.constant(bias)).value(), AllClose<double>({11, 22, 33, 14, 25, 36}));
  // The small operand may come first.
  CHECK_THAT(add(tape.constant(bias), tape.constant(x)).value(), AllClose<double>({11, 22, 33, 14, 25, 36}));
}

TEST_CASE("add: the bias gradient sums over the broadcast rows", "[op]") {
  Tape<double> tape;
  Parameter<double> x("x", Tensor<double>::from({1, 2, 3, 4, 5, 6}, {2, 3}));
  Parameter<double> b("b", Tensor<double>::from({0, 0, 0}, {3}));
  const auto dy = Tensor<double>::from({1, 2, 3, 10, 20, 30}, {2, 3});
  tape.backward(add(tape.param(x), tape.param(b)), dy.view());
  CHECK_THAT(b.grad().view(), AllClose<double>({11, 22, 33}));
  CHECK_THAT(x.grad().view(), AllClose<double>({1, 2, 3, 10, 20, 30}));
}

TEST_CASE("gradcheck: add", "[op][gradcheck]") {
  const auto [sa, sb] = GENERATE(std::pair{Shape{1}, Shape{1}}, std::pair{Shape{3, 5}, Shape{3, 5}},
                                 std::pair{Shape{2, 3, 5}, Shape{5}}, std::pair{Shape{7}, Shape{2, 7}},
                                 std::pair{Shape{2, 2, 3, 3}, Shape{3, 3}});
  auto r = gradcheck("add", [](Tape<double>&, std::span<const Var<double>> in) { return add(in[0], in[1]); },
                     {randn(sa, 20), randn(sb, 21)});
  require_gradcheck(r);
}

TEST_CASE("add: float32 agrees with float64", "[op][precision]") {
  require_precisions_agree([](auto&, auto in) { return add(in[0], in[1]); }, {randn({5, 7, 9}, 22), randn({9}, 23)},
                           1e-6);
}

TEST_CASE("add: incompatible shapes are named", "[op][errors]") {
  Tape<float> tape;
  const Tensor<float> a(Shape{2, 3}), b(Shape{2});
  REQUIRE_THROWS_WITH(add(tape.constant(a), tape.constant(b)),
                      Catch::StartsWith("add: shapes (2,3) and (2) do not broadcast"));
}
