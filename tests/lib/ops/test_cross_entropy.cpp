#include "support.h"
#include "tapegrad/ops/cross_entropy.h"

using namespace tapegrad;
using namespace tapegrad::testing;

TEST_CASE("cross_entropy: mean of logsumexp minus the target logit", "[op]") {
  Tape<double> tape;
  const auto z = Tensor<double>::from({1, 2, 3, 1, 1, 1}, {2, 3});
  const std::vector<int32_t> t{2, 0};
  // ((log(e+e^2+e^3) - 3) + (log 3 - 1 + 1 - 1)) / 2, computed independently.
  REQUIRE_THAT(cross_entropy(tape.constant(z), t).value(), AllClose<double>({0.753109126556245}, 1e-14, 1e-13));
}

TEST_CASE("cross_entropy: stable for extreme logits (no log(softmax) underflow)", "[op]") {
  Tape<float> tape;
  const auto z = Tensor<float>::from({0.f, 1000.f}, {1, 2});
  const std::vector<int32_t> t{0};
  // log(softmax) would give log(0) = -inf; the fused form gives exactly 1000.
  REQUIRE_THAT(cross_entropy(tape.constant(z), t).value(), AllClose<float>({1000.0}, 1e-3, 0));
}

TEST_CASE("gradcheck: cross_entropy", "[op][gradcheck]") {
  const Shape shape = GENERATE(Shape{1, 1}, Shape{1, 7}, Shape{5, 3}, Shape{2, 3, 11});
  std::vector<int32_t> targets(shape.rows());
  Rng rng(7);
  for (auto& t : targets) t = static_cast<int32_t>(rng.below(shape.last()));
  auto r = gradcheck("cross_entropy",
                     [&](Tape<double>&, std::span<const Var<double>> in) { return cross_entropy(in[0], targets); },
                     {randn(shape, 8)});
  require_gradcheck(r);
}

TEST_CASE("cross_entropy: float32 agrees with float64", "[op][precision]") {
  std::vector<int32_t> targets{0, 64, 3, 17, 9, 40};
  require_precisions_agree([&](auto&, auto in) { return cross_entropy(in[0], targets); }, {randn({6, 65}, 9)},
                           1e-6);
}

TEST_CASE("cross_entropy: bad targets are named in the error", "[op][errors]") {
  Tape<float> tape;
  const Tensor<float> z(Shape{2, 5});
  const std::vector<int32_t> bad{1, 5};
  REQUIRE_THROWS_WITH(cross_entropy(tape.constant(z), bad),
                      Catch::Contains("target 5 at row 1 is out of range [0, 5)"));
  const std::vector<int32_t> short_targets{1};
  REQUIRE_THROWS_WITH(cross_entropy(tape.constant(z), short_targets),
                      Catch::Contains("(2,5) have 2 rows but 1 targets"));
}

TEST_CASE("cross_entropy: the z-loss adds z * logsumexp^2 per row, and its gradient", "[op]") {
  // One row z = [0, ln 3]: Z = 1 + 3 = 4, lse = ln 4; target 0: plain loss ln 4, z-loss 0.1 ln^2 4.
  Tape<double> tape;
  Parameter<double> z("z", Tensor<double>::from({0, std::log(3.0)}, {1, 2}));
  const std::vector<int32_t> t{0};
  Var<double> loss = cross_entropy(tape.param(z), t, 0.1);
  const double l4 = std::log(4.0);
  CHECK_THAT(loss.value()[0], Catch::Matchers::WithinRel(l4 + 0.1 * l4 * l4, 1e-14));
  // d/dz = (1 + 2 * 0.1 * ln 4) softmax - onehot = (1 + 0.2 ln 4) [1/4, 3/4] - [1, 0].
  tape.backward(loss);
  const double k = 1 + 0.2 * l4;
  CHECK_THAT(z.grad().view(), AllClose<double>({k / 4 - 1, 3 * k / 4}, 1e-14, 1e-14));
  REQUIRE_THROWS_WITH(cross_entropy(tape.param(z), t, -1.0), "cross_entropy: z_loss must be a finite number >= 0, got -1");
}

TEST_CASE("cross_entropy: the terms report the cross-entropy, the penalty and log Z apart", "[op]") {
  // Two rows, V = 2. Row 0: z = [0, ln 3], Z = 4, target 0: CE ln 4. Row 1: z = [ln 2, -ln 2],
  // Z = 2 + 1/2 = 5/2, target 1: CE ln(5/2) + ln 2 = ln 5. With c = 0.1:
  //   cross_entropy = (ln 4 + ln 5) / 2,  z_loss = 0.1 (ln^2 4 + ln^2 2.5) / 2,
  //   log Z mean = (ln 4 + ln 2.5) / 2 = ln 10 / 2,  min = ln 2.5; the value is their sum.
  Tape<double> tape;
  const std::vector<int32_t> t{0, 1};
  const Tensor<double> z = Tensor<double>::from({0, std::log(3.0), std::log(2.0), -std::log(2.0)}, {2, 2});
  const double l4 = std::log(4.0), l25 = std::log(2.5);
  CrossEntropyTerms terms;
  const Var<double> loss = cross_entropy(tape.constant(z.view()), t, 0.1, &terms);
  CHECK_THAT(terms.cross_entropy, Catch::Matchers::WithinRel((l4 + std::log(5.0)) / 2, 1e-14));
  CHECK_THAT(terms.z_loss, Catch::Matchers::WithinRel(0.1 * (l4 * l4 + l25 * l25) / 2, 1e-14));
  CHECK_THAT(terms.log_z_mean, Catch::Matchers::WithinRel(std::log(10.0) / 2, 1e-14));
  CHECK_THAT(terms.log_z_min, Catch::Matchers::WithinRel(l25, 1e-14));
  CHECK_THAT(loss.value()[0], Catch::Matchers::WithinRel(terms.objective(), 1e-15));
  // The perplexity is exp of the cross-entropy alone: sqrt(4 * 5) here, not exp(objective).
  CHECK_THAT(std::exp(terms.cross_entropy), Catch::Matchers::WithinRel(std::sqrt(20.0), 1e-14));
  // Without a z-loss the penalty is exactly 0 and the value is the cross-entropy's bits.
  CrossEntropyTerms plain;
  const Var<double> ce = cross_entropy(tape.constant(z.view()), t, 0.0, &plain);
  CHECK(plain.z_loss == 0.0);
  CHECK(ce.value()[0] == plain.cross_entropy);
  CHECK(plain.cross_entropy == terms.cross_entropy);
}

TEST_CASE("gradcheck: cross_entropy with z-loss", "[op][gradcheck]") {
  const std::vector<int32_t> t{3, 0, 5, 5, 1, 2};
  require_gradcheck(gradcheck(
      "cross_entropy z-loss", [&](Tape<double>&, std::span<const Var<double>> in) { return cross_entropy(in[0], t, 0.05); },
      {randn({6, 7}, 71, 3.0)}));
}
