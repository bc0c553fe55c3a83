#include <cmath>
#include <limits>

#include "support.h"
#include "tapegrad/rows.h"
#include "tapegrad/tensor_math.h"

using namespace tapegrad;

namespace {
Tensor<double> t(Shape shape, std::vector<double> v) {
  Tensor<double> x(shape);
  for (int64_t i = 0; i < x.numel(); ++i) x[i] = v[static_cast<size_t>(i)];
  return x;
}
std::vector<double> values(const Tensor<double>& x) { return std::vector<double>(x.data(), x.data() + x.numel()); }
}  // namespace

TEST_CASE("tensor math: element-wise arithmetic with the tape's broadcasting rule", "[tensor]") {
  const Tensor<double> a = t({2, 3}, {1, 2, 3, 4, 5, 6}), b = t({3}, {10, 20, 30});
  CHECK(values(a + b) == std::vector<double>{11, 22, 33, 14, 25, 36});
  CHECK((b - a).shape() == Shape{2, 3});
  CHECK(values(b - a) == std::vector<double>{9, 18, 27, 6, 15, 24});
  CHECK(values(a * a) == std::vector<double>{1, 4, 9, 16, 25, 36});
  CHECK(values(a / b) == std::vector<double>{0.1, 0.1, 0.1, 0.4, 0.25, 0.2});
  CHECK(values(2.0 * a - 1.0) == std::vector<double>{1, 3, 5, 7, 9, 11});
  CHECK(values(1.0 - a) == std::vector<double>{0, -1, -2, -3, -4, -5});
  CHECK(values(-a + 0.5) == std::vector<double>{-0.5, -1.5, -2.5, -3.5, -4.5, -5.5});
  REQUIRE_THROWS_WITH(a + t({2}, {1, 2}), "add: shapes (2,3) and (2) do not broadcast (one must equal the trailing dims of the other)");
}

TEST_CASE("tensor math: comparisons are masks, and NaN equals nothing", "[tensor]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor<double> a = t({4}, {1, 2, nan, 4}), b = t({4}, {1, 3, nan, 0});
  CHECK(values(eq(a, b)) == std::vector<double>{1, 0, 0, 0});
  CHECK(values(ne(a, b)) == std::vector<double>{0, 1, 1, 1});
  CHECK(values(lt(a, b)) == std::vector<double>{0, 1, 0, 0});
  CHECK(values(le(a, b)) == std::vector<double>{1, 1, 0, 0});
  CHECK(values(gt(a, b)) == std::vector<double>{0, 0, 0, 1});
  CHECK(values(ge(a, b)) == std::vector<double>{1, 0, 0, 1});
  // Accuracy of predictions: argmax of logits against labels, as a mean of a mask.
  const Tensor<double> logits = t({3, 2}, {0.1, 0.9, 0.8, 0.2, 0.3, 0.7});
  Tensor<double> predicted({3}), labels = t({3}, {1, 0, 0});
  const std::vector<int32_t> top = argmax_rows<double>(logits.view());
  for (int64_t i = 0; i < 3; ++i) predicted[i] = top[static_cast<size_t>(i)];
  CHECK(mean(eq(predicted, labels)) == Approx(2.0 / 3).epsilon(1e-15));
  // Any reading of a tensor: a Tensor, its mutable or const view.
  CHECK(values(add(predicted.view(), labels)) == std::vector<double>{2, 0, 1});
}

TEST_CASE("tensor math: reductions over every element", "[tensor]") {
  const Tensor<double> a = t({2, 2}, {3, -1, 7, 2});
  CHECK(sum(a.view()) == 11);
  CHECK(mean(a.view()) == 2.75);
  CHECK(min(a.view()) == -1);
  CHECK(max(a.view()) == 7);
  const Tensor<double> none(Shape{0});
  CHECK(sum(none.view()) == 0);
  CHECK(std::isnan(mean(none.view())));
  REQUIRE_THROWS_WITH(max(none.view()), "max of an empty tensor (shape (0))");
  CHECK(std::isnan(max(t({3}, {1, std::nan(""), 2}).view())));
  // float32 sums in double: 2^24 + 1 ones do not stall at 2^24.
  Tensor<float> ones(Shape{(int64_t{1} << 24) + 1});
  ones.fill(1);
  CHECK(sum(ones.view()) == static_cast<double>((int64_t{1} << 24) + 1));
}
