#include "support.h"
#include "tapegrad/ops.h"
#include "tapegrad/ops/matmul.h"
#include "tapegrad/threads.h"

using namespace tapegrad;
using namespace tapegrad::testing;

namespace {
const auto kA = Tensor<double>::from({1, 2, 3, 4}, {2, 2});
const auto kB = Tensor<double>::from({5, 6, 7, 8}, {2, 2});

// Stored shape of an operand whose op() is (rows, cols), with optional batch dims in front.
Shape stored(std::initializer_list<int64_t> batch, int64_t rows, int64_t cols, Trans t) {
  Shape s(batch);
  s.push_back(t == Trans::kYes ? cols : rows);
  s.push_back(t == Trans::kYes ? rows : cols);
  return s;
}
}  // namespace

TEST_CASE("matmul: forward with every combination of transposes", "[op]") {
  Tape<double> tape;
  auto a = tape.constant(kA), b = tape.constant(kB);
  CHECK_THAT(matmul(a, b).value(), AllClose<double>({19, 22, 43, 50}));
  CHECK_THAT(matmul(a, b, Trans::kYes, Trans::kNo).value(), AllClose<double>({26, 30, 38, 44}));
  CHECK_THAT(matmul(a, b, Trans::kNo, Trans::kYes).value(), AllClose<double>({17, 23, 39, 53}));
  CHECK_THAT(matmul(a, b, Trans::kYes, Trans::kYes).value(), AllClose<double>({23, 31, 34, 46}));
}

TEST_CASE("matmul: batched, and a shared matrix broadcast over the batch", "[op]") {
  Tape<double> tape;
  // Batch of two: [A, 2A] @ B and A's batch against one shared B give the same products.
  auto a2 = Tensor<double>::from({1, 2, 3, 4, 2, 4, 6, 8}, {2, 2, 2});
  auto b2 = Tensor<double>::from({5, 6, 7, 8, 5, 6, 7, 8}, {2, 2, 2});
  const std::vector<double> expect{19, 22, 43, 50, 38, 44, 86, 100};
  CHECK_THAT(matmul(tape.constant(a2), tape.constant(b2)).value(), AllClose<double>(expect));
  Var<double> shared_b = matmul(tape.constant(a2), tape.constant(kB));
  CHECK(shared_b.shape() == Shape{2, 2, 2});
  CHECK_THAT(shared_b.value(), AllClose<double>(expect));
  // Shared A against a batch of B: A @ [B, B].
  CHECK_THAT(matmul(tape.constant(kA), tape.constant(b2)).value(),
             AllClose<double>({19, 22, 43, 50, 19, 22, 43, 50}));
}

TEST_CASE("matmul: an inner dim of 0 is a product of zeros, its gradients empty (no division by K)", "[op]") {
  const Trans tb = GENERATE(Trans::kNo, Trans::kYes);
  Tape<double> t;
  Parameter<double> a("a", Tensor<double>(Shape{2, 0})), b("b", Tensor<double>(tb == Trans::kNo ? Shape{0, 3} : Shape{3, 0}));
  Var<double> y = matmul(t.param(a), t.param(b), Trans::kNo, tb);
  REQUIRE(y.shape() == Shape{2, 3});
  for (int64_t i = 0; i < 6; ++i) CHECK(y.value()[i] == 0.0);
  t.backward(sum(y));
  CHECK(a.grad().shape() == Shape{2, 0});
}

TEST_CASE("gradcheck: matmul", "[op][gradcheck]") {
  const Trans ta = GENERATE(Trans::kNo, Trans::kYes);
  const Trans tb = GENERATE(Trans::kNo, Trans::kYes);
  const int layout = GENERATE(0, 1, 2, 3);  // plain, batched, shared B, shared A
  const auto [M, K, N] = GENERATE(std::tuple{1, 1, 1}, std::tuple{3, 5, 2}, std::tuple{4, 1, 7});
  const std::initializer_list<int64_t> none{}, batch{2, 3};
  const Shape sa = stored(layout == 1 || layout == 2 ? batch : none, M, K, ta);
  const Shape sb = stored(layout == 1 || layout == 3 ? batch : none, K, N, tb);
  CAPTURE(sa, sb, ta == Trans::kYes, tb == Trans::kYes);
  auto r = gradcheck(
      "matmul",
      [&](Tape<double>&, std::span<const Var<double>> in) { return matmul(in[0], in[1], ta, tb); },
      {randn(sa, 10), randn(sb, 11)});
  require_gradcheck(r);
}

TEST_CASE("matmul: float32 agrees with float64", "[op][precision]") {
  require_precisions_agree([](auto&, auto in) { return matmul(in[0], in[1], Trans::kNo, Trans::kYes); },
                           {randn({3, 17, 64}, 12), randn({33, 64}, 13)}, 1e-5);
}

TEST_CASE("matmul: large products split across threads give the single-thread result", "[op]") {
  // 200 x 300 x 100 is above the threshold at which gemm splits C into slabs.
  Tape<float> tape;
  Rng rng(3);
  const auto a = Tensor<float>::randn({200, 100}, rng), b = Tensor<float>::randn({100, 300}, rng);
  set_num_threads(1);
  const Tensor<float> one = Tensor<float>::copy_of(matmul(tape.constant(a), tape.constant(b)).value());
  set_num_threads(2);
  const Tensor<float> two = Tensor<float>::copy_of(matmul(tape.constant(a), tape.constant(b)).value());
  set_num_threads(0);
  REQUIRE_THAT(two.view(), AllClose<float>(to_vector<float>(one.view()), 1e-5, 1e-5));
}

TEST_CASE("matmul: shape errors name the op and both shapes", "[op][errors]") {
  Tape<float> tape;
  const Tensor<float> a(Shape{2, 3}), b(Shape{4, 5}), v(Shape{3}), c(Shape{2, 3, 4}), d(Shape{3, 4, 5});
  REQUIRE_THROWS_WITH(matmul(tape.constant(a), tape.constant(b)),
                      "matmul: (2,3) x (4,5): inner dims 3 != 4");
  REQUIRE_THROWS_WITH(matmul(tape.constant(v), tape.constant(a)), Catch::Contains("at least 2 dims"));
  REQUIRE_THROWS_WITH(matmul(tape.constant(c), tape.constant(d)),
                      Catch::Contains("batch dims (2) and (3) differ"));
}
