#include <cmath>

#include "support.h"
#include "tapegrad/ops/dropout.h"
#include "tapegrad/ops/masked_fill.h"
#include "tapegrad/ops/mse_loss.h"

using namespace tapegrad;
using namespace tapegrad::testing;

TEST_CASE("dropout: identity in eval, in training zeros about p and scales the rest, seeded", "[op]") {
  Tape<double> tape;
  tape.manual_seed(42);
  const auto x = tape.constant(Tensor<double>::full({10000}, 1.0));
  CHECK(dropout(x, 0.3, /*training=*/false).id() == x.id());
  CHECK(dropout(x, 0.0).id() == x.id());
  const auto y = dropout(x, 0.3);
  int64_t zeros = 0;
  for (int64_t i = 0; i < y.shape().numel(); ++i) {
    const double v = y.value()[i];
    REQUIRE((v == 0 || std::abs(v - 1 / 0.7) < 1e-15));
    zeros += v == 0;
  }
  CHECK(zeros == 3046);  // pinned: seed 42; binomial(10000, 0.3) has mean 3000, sd 46
  Tape<double> again;
  again.manual_seed(42);
  const auto y2 = dropout(again.constant(Tensor<double>::full({10000}, 1.0)), 0.3);
  CHECK(std::equal(y.data(), y.data() + 10000, y2.data()));
  REQUIRE_THROWS_WITH(dropout(x, 1.0), "dropout: p must be in [0, 1), got 1");
}

TEST_CASE("gradcheck: dropout", "[op][gradcheck]") {
  // The mask is drawn once per recording; gradcheck records anew for every probe, so the tape is
  // re-seeded each time to make the function deterministic.
  require_gradcheck(gradcheck(
      "dropout",
      [](Tape<double>& t, std::span<const Var<double>> in) {
        t.manual_seed(7);
        return dropout(in[0], 0.4);
      },
      {randn({4, 6}, 1)}));
}

TEST_CASE("mse_loss: value, gradients for both sides, shape errors", "[op]") {
  Tape<double> tape;
  const auto p = tape.constant(Tensor<double>::from({1, 2, 3, 4}, {2, 2}));
  const auto t = tape.constant(Tensor<double>::from({1, 0, 3, 1}, {2, 2}));
  CHECK_THAT(mse_loss(p, t).value(), AllClose<double>({(0 + 4 + 0 + 9) / 4.0}));
  REQUIRE_THROWS_WITH(mse_loss(p, tape.constant(Tensor<double>::zeros({4}))),
                      "mse_loss: prediction (2,2) and target (4) must have the same shape");
}

TEST_CASE("gradcheck: mse_loss", "[op][gradcheck]") {
  require_gradcheck(gradcheck(
      "mse_loss", [](Tape<double>&, std::span<const Var<double>> in) { return mse_loss(in[0], in[1]); },
      {randn({3, 4}, 2), randn({3, 4}, 3)}));
}

TEST_CASE("masked_fill: fills where the mask is set, broadcast as a suffix, no gradient there", "[op]") {
  Tape<double> tape;
  Parameter<double> x("x", Tensor<double>::from({1, 2, 3, 4, 5, 6}, {2, 3}));
  const auto mask = tape.constant(Tensor<double>::from({0, 1, 0}, {3}));
  const auto y = masked_fill(tape.param(x), mask, -1e9);
  CHECK_THAT(y.value(), AllClose<double>({1, -1e9, 3, 4, -1e9, 6}));
  tape.backward(y, Tensor<double>::full({2, 3}, 1).view());
  CHECK_THAT(x.grad().view(), AllClose<double>({1, 0, 1, 1, 0, 1}));
  REQUIRE_THROWS_WITH(masked_fill(mask, y, 0.0), Catch::StartsWith("masked_fill: the mask (2,3) must match x (3)"));
}

TEST_CASE("gradcheck: masked_fill", "[op][gradcheck]") {
  Rng rng(5);
  Tensor<double> mask({4, 5});
  for (int64_t i = 0; i < mask.numel(); ++i) mask[i] = rng.uniform() < 0.4 ? 1 : 0;
  require_gradcheck(gradcheck(
      "masked_fill",
      [&](Tape<double>& t, std::span<const Var<double>> in) { return masked_fill(in[0], t.constant(mask.view()), 2.5); },
      {randn({3, 4, 5}, 4)}));
}

TEST_CASE("dropout, mse_loss, masked_fill: float32 agrees with float64", "[op][precision]") {
  require_precisions_agree([](auto&, auto in) { return mse_loss(in[0], in[1]); }, {randn({6, 7}, 8), randn({6, 7}, 9)},
                           1e-6);
  require_precisions_agree(
      [](auto& t, auto in) {
        t.manual_seed(3);
        return dropout(in[0], 0.25);
      },
      {randn({6, 7}, 10)}, 1e-6);
}
