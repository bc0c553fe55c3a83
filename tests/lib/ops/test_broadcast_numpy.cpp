#include "support.h"
#include "tapegrad/ops/add.h"
#include "tapegrad/ops/div.h"
#include "tapegrad/ops/mul.h"
#include "tapegrad/ops/reduce.h"
#include "tapegrad/ops/sub.h"
#include "tapegrad/parameter.h"
#include "tapegrad/threads.h"

using namespace tapegrad;
using namespace tapegrad::testing;

// numpy's broadcasting beyond the suffix case (ops/broadcast.h): a (4, 8) row block over its
// (4, 1) row means, a (2, 1, 3) against a (4, 1), a (1, 3) row against a (2, 1) column.

TEST_CASE("broadcast: numpy's rule, values by hand", "[op]") {
  Tape<double> tape;
  const auto x = tape.constant(Tensor<double>::from({1, 2, 3, 4, 5, 6}, {2, 3}));
  const auto m = tape.constant(Tensor<double>::from({2, 5}, {2, 1}));  // a column: one value per row
  CHECK_THAT((x / m).value(), AllClose<double>({0.5, 1, 1.5, 0.8, 1, 1.2}));
  CHECK_THAT((m - x).value(), AllClose<double>({1, 0, -1, 1, 0, -1}));
  const auto row = tape.constant(Tensor<double>::from({10, 20, 30}, {1, 3}));
  const auto outer = row + m;  // (1,3) + (2,1) -> (2,3)
  CHECK(outer.shape() == Shape{2, 3});
  CHECK_THAT(outer.value(), AllClose<double>({12, 22, 32, 15, 25, 35}));
  const auto cube = tape.constant(Tensor<double>::from({1, 2, 3, 4, 5, 6}, {2, 1, 3}));
  const auto col4 = tape.constant(Tensor<double>::from({1, 10, 100, 1000}, {4, 1}));
  const auto p = cube * col4;  // (2,1,3) * (4,1) -> (2,4,3)
  CHECK(p.shape() == Shape{2, 4, 3});
  CHECK(p.value()[0] == 1);          // [0,0,0] = 1 * 1
  CHECK(p.value()[1 * 3 + 2] == 30);  // [0,1,2] = 3 * 10
  CHECK(p.value()[(1 * 4 + 3) * 3 + 1] == 5000);  // [1,3,1] = 5 * 1000
  REQUIRE_THROWS_WITH(add(x, tape.constant(Tensor<double>::zeros({2}))),
                      "add: shapes (2,3) and (2) do not broadcast (dim -1 is 3 against 2; each pair of trailing dims "
                      "must be equal or one of them 1, as in numpy)");
  REQUIRE_THROWS_WITH(mul(cube, tape.constant(Tensor<double>::zeros({2, 2}))), Catch::StartsWith("mul: shapes (2,1,3) and (2,2) do not"));
  CHECK(mul(cube, tape.constant(Tensor<double>::zeros({3, 3}))).shape() == Shape{2, 3, 3});  // as numpy
}

TEST_CASE("gradcheck: add, sub, mul and div under numpy's broadcasting", "[op][gradcheck]") {
  const auto [sa, sb] = GENERATE(std::pair{Shape{4, 7}, Shape{4, 1}}, std::pair{Shape{4, 1}, Shape{4, 7}},
                                 std::pair{Shape{1, 3}, Shape{2, 1}}, std::pair{Shape{2, 1, 3}, Shape{4, 1}},
                                 std::pair{Shape{3, 1, 2}, Shape{1, 5, 1}}, std::pair{Shape{1}, Shape{2, 3}},
                                 std::pair{Shape{2, 3, 1, 5}, Shape{3, 4, 1}});
  Tensor<double> b = randn(sb, 12);
  for (int64_t i = 0; i < b.numel(); ++i) b[i] += b[i] >= 0 ? 0.5 : -0.5;  // away from 0, for div
  const std::vector<Tensor<double>> in{randn(sa, 11), b};
  require_gradcheck(gradcheck("add", [](Tape<double>&, std::span<const Var<double>> v) { return v[0] + v[1]; }, in));
  require_gradcheck(gradcheck("sub", [](Tape<double>&, std::span<const Var<double>> v) { return v[0] - v[1]; }, in));
  require_gradcheck(gradcheck("mul", [](Tape<double>&, std::span<const Var<double>> v) { return v[0] * v[1]; }, in));
  require_gradcheck(gradcheck("div", [](Tape<double>&, std::span<const Var<double>> v) { return v[0] / v[1]; }, in));
}

TEST_CASE("broadcast: numpy's rule gives the same bits on 1 and 2 threads", "[op]") {
  const auto run = [](int threads) {
    set_num_threads(threads);
    const auto to_float = [](const Tensor<double>& t) {
      Tensor<float> f = Tensor<float>::zeros(t.shape());
      for (int64_t i = 0; i < t.numel(); ++i) f[i] = static_cast<float>(t[i]);
      return f;
    };
    Parameter<float> pa("a", to_float(randn({64, 1, 33}, 3))), pb("b", to_float(randn({17, 1}, 4)));
    Tape<float> tape;
    const Var<float> a = tape.param(pa), b = tape.param(pb);
    tape.backward(sum(div(mul(a, b), b + tape.constant(Tensor<float>::full({1}, 3.0f)))));
    return std::vector<float>(pb.grad().data(), pb.grad().data() + pb.grad().numel());
  };
  const auto one = run(1), two = run(2);
  set_num_threads(1);
  CHECK(one == two);
}
