// ScaleNorm's own numbers, worked by hand. (As a registered norm it is also gradchecked as a module,
// inside the decoder pre and post, as QK-norm, saved and reloaded, and swept by the tests that
// GENERATE over the registry.)
#include "nn_support.h"
#include "tapegrad/nn/rmsnorm.h"
#include "tapegrad/nn/scalenorm.h"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::testing;

TEST_CASE("scalenorm: the worked example, by hand", "[nn][scalenorm]") {
  // x = [1, 2, 3, 4]: ||x|| = sqrt(30) = 5.4772; g = sqrt(4) = 2 at init, so y = 2 x / sqrt(30) =
  // [0.3651, 0.7303, 1.0954, 1.4606] — RMSNorm's numbers (||x|| = sqrt(C) rms(x)).
  ScaleNorm<double> sn({.dim = 4});
  CHECK(sn.parameter("g").value()[0] == 2.0);
  Tape<double> tape;
  Parameter<double> x("x", Tensor<double>::from({1, 2, 3, 4}, {1, 4}));
  Var<double> y = sn.forward(tape.param(x));
  CHECK_THAT(y.value(), AllClose<double>({0.365148371670111, 0.730296743340221, 1.095445115010332, 1.460593486680443},
                                         1e-15, 0));
  // dy = e_0: dx = g r (e_0 - r^2 x_0 x) = 2/sqrt(30) e_0 - 2/30^1.5 [1, 2, 3, 4]; dg = x_0 / ||x||.
  tape.backward(y, Tensor<double>::from({1, 0, 0, 0}, {1, 4}).view());
  const double a = 2 / std::sqrt(30.0), b = 2 / std::pow(30.0, 1.5);
  CHECK_THAT(x.grad().view(), AllClose<double>({a - b, -2 * b, -3 * b, -4 * b}, 1e-15, 1e-14));
  CHECK_THAT(sn.parameter("g").grad()[0], Catch::Matchers::WithinRel(1 / std::sqrt(30.0), 1e-14));
}

TEST_CASE("scalenorm: equals RMSNorm at init, but with one gain instead of C", "[nn][scalenorm]") {
  ScaleNorm<double> sn({.dim = 16, .eps = 1e-12});
  RMSNorm<double> rms({.dim = 16, .eps = 0});
  CHECK(sn.num_parameters() == 1);
  CHECK(rms.num_parameters() == 16);
  const Tensor<double> x = randn({3, 16}, 1, 5.0);
  Tape<double> tape;
  CHECK_THAT(sn.forward(tape.constant(x)).value(),
             AllClose<double>(to_vector<double>(rms.forward(tape.constant(x)).value()), 1e-14, 1e-13));
}

TEST_CASE("gradcheck: scalenorm, both regimes", "[nn][gradcheck][scalenorm]") {
  // Rows above eps and rows below it (clipped: y = g x / eps, linear in x), in one tensor.
  ScaleNorm<double> sn({.dim = 5, .eps = 0.5});
  sn.parameter("g").value()[0] = 1.7;
  Tensor<double> xv = randn({4, 5}, 2);
  for (int64_t c = 0; c < 5; ++c) xv.at(1, c) *= 0.05, xv.at(3, c) *= 0.02;  // ||x|| < 0.5
  Parameter<double> x("x", xv);
  require_gradcheck(gradcheck_module("scalenorm", sn, x, [&](Var<double> v) { return sn.forward(v); }));
  // In the clipped rows the output is exactly g x / eps.
  Tape<double> tape;
  const auto y = sn.forward(tape.constant(xv)).value();
  for (int64_t c = 0; c < 5; ++c) CHECK(y[5 + c] == 1.7 * (1.0 / 0.5) * xv.at(1, c));
}

TEST_CASE("scalenorm: bad shapes and eps are named", "[nn][scalenorm][errors]") {
  Tape<double> tape;
  REQUIRE_THROWS_WITH(scale_norm(tape.constant(randn({2, 3}, 1)), tape.constant(randn({3}, 2))),
                      "scale_norm: g (3) must be (1) for input (2,3)");
  REQUIRE_THROWS_WITH(ScaleNorm<float>({.dim = 4, .eps = 0}), "ScaleNorm: eps must be > 0 (it bounds 1/||x||), got 0");
}

TEST_CASE("gradcheck: a gain before a scale-invariant norm has a zero gradient, reported as such", "[nn][gradcheck][scalenorm]") {
  // ScaleNorm(g1 ScaleNorm(x)) does not depend on g1 at all: its true gradient is 0, so gradcheck
  // reports it as a zero-gradient input instead of a meaningless relative error of ~1.
  ScaleNorm<double> inner({.dim = 6}), outer({.dim = 6});
  inner.parameter("g").value()[0] = 1.3, outer.parameter("g").value()[0] = 0.7;
  Parameter<double> x("x", randn({3, 6}, 4));
  std::vector<Parameter<double>*> params{&x, &inner.parameter("g"), &outer.parameter("g")};
  const GradcheckResult r =
      gradcheck("scalenorm o scalenorm", [&](Tape<double>& t) { return outer.forward(inner.forward(t.param(x))); }, params);
  require_gradcheck(r);
  REQUIRE(r.inputs.size() == 3);
  CHECK_FALSE(r.inputs[0].zero_gradient);
  CHECK(r.inputs[1].zero_gradient);
  CHECK(r.inputs[1].rel_error == 0);
  CHECK_FALSE(r.inputs[2].zero_gradient);
  CHECK(r.zero_gradient_inputs == 1);
  CHECK_THAT(r.message, Catch::Matchers::Contains("1 input(s) with a zero gradient"));
}
