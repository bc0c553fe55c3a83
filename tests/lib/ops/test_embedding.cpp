#include "support.h"
#include "tapegrad/ops/embedding.h"

using namespace tapegrad;
using namespace tapegrad::testing;

TEST_CASE("embedding: gathers rows into (B, T, C)", "[op]") {
  Tape<double> tape;
  const auto w = Tensor<double>::from({0, 1, 10, 11, 20, 21}, {3, 2});
  const std::vector<int32_t> ids{2, 0, 2, 1};
  Var<double> y = embedding(tape.constant(w), ids, {2, 2});
  CHECK(y.shape() == Shape{2, 2, 2});
  CHECK_THAT(y.value(), AllClose<double>({20, 21, 0, 1, 20, 21, 10, 11}));
}

TEST_CASE("embedding: repeated ids scatter-add their gradients", "[op]") {
  Tape<double> tape;
  Parameter<double> w("w", Tensor<double>(Shape{3, 2}));
  const std::vector<int32_t> ids{2, 0, 2};
  const auto dy = Tensor<double>::from({1, 2, 3, 4, 5, 6}, {3, 2});
  tape.backward(embedding(tape.param(w), ids, {3}), dy.view());
  CHECK_THAT(w.grad().view(), AllClose<double>({3, 4, 0, 0, 6, 8}));  // row 2 = dy[0] + dy[2]
}

TEST_CASE("gradcheck: embedding", "[op][gradcheck]") {
  const auto [V, C, ids] = GENERATE(std::tuple{1, 1, std::vector<int32_t>{0}},
                                    std::tuple{5, 3, std::vector<int32_t>{4, 0, 4, 2, 4, 1}});
  require_gradcheck(gradcheck(
      "embedding",
      [&ids = ids](Tape<double>&, std::span<const Var<double>> in) {
        return embedding(in[0], ids, {static_cast<int64_t>(ids.size())});
      },
      {randn({V, C}, 70)}));
}

TEST_CASE("embedding: float32 agrees with float64", "[op][precision]") {
  const std::vector<int32_t> ids{3, 3, 1, 0, 7, 3};
  require_precisions_agree([&](auto&, auto in) { return embedding(in[0], ids, {2, 3}); }, {randn({8, 16}, 71)}, 1e-7);
}

TEST_CASE("embedding: out-of-range ids are named", "[op][errors]") {
  Tape<float> tape;
  const Tensor<float> w(Shape{4, 2});
  const std::vector<int32_t> ids{1, 4};
  REQUIRE_THROWS_WITH(embedding(tape.constant(w), ids, {2}),
                      "embedding: id 4 at position 1 is out of range for a table of 4 rows");
}
