// DyT's own numbers, worked by hand. (As a registered norm it is also gradchecked as a module,
// inside the decoder pre and post, saved and reloaded, and swept by the tests that GENERATE over
// the registry.)
#include <cmath>

#include "nn_support.h"
#include "tapegrad/nn/decoder.h"
#include "tapegrad/nn/dyt.h"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::testing;

TEST_CASE("dyt: the worked example, by hand", "[nn][dyt]") {
  // x = [1, 2, 3, 4], alpha = 0.5, gamma = 1, beta = 0: y = tanh(x / 2) =
  // [0.46211716, 0.76159416, 0.90514825, 0.96402758] — not centred, not unit RMS: DyT only bounds.
  DyT<double> d({.dim = 4});
  CHECK(d.parameter("alpha").value()[0] == 0.5);
  Tape<double> tape;
  Parameter<double> x("x", Tensor<double>::from({1, 2, 3, 4}, {1, 4}));
  Var<double> y = d.forward(tape.param(x));
  CHECK_THAT(y.value(), AllClose<double>({0.46211716, 0.76159416, 0.90514825, 0.96402758}, 1e-8, 0));
  // dy = 1: u = 1 - t^2; dx = alpha u = [0.39322387, 0.20998717, 0.09035332, 0.03532541];
  // dalpha = sum x u = 2.45111963; dgamma = t; dbeta = 1.
  tape.backward(y, Tensor<double>::full({1, 4}, 1).view());
  CHECK_THAT(x.grad().view(), AllClose<double>({0.39322387, 0.20998717, 0.09035332, 0.03532541}, 1e-8, 0));
  CHECK_THAT(d.parameter("alpha").grad()[0], Catch::Matchers::WithinAbs(2.45111963, 1e-8));
  CHECK_THAT(d.parameter("weight").grad().view(), AllClose<double>({0.46211716, 0.76159416, 0.90514825, 0.96402758}, 1e-8, 0));
  CHECK_THAT(d.parameter("bias").grad().view(), AllClose<double>({1, 1, 1, 1}));
  // 10 x: tanh(5 .. 20) = [0.9999092, 1, 1, 1]: squashed, not rescaled (LayerNorm would give the same row).
  Tape<double> t2;
  CHECK_THAT(d.forward(t2.constant(Tensor<double>::from({10, 20, 30, 40}, {1, 4}))).value(),
             AllClose<double>({0.9999092, 1, 1, 1}, 1e-7, 0));
}

TEST_CASE("gradcheck: dyt, with and without bias", "[nn][gradcheck][dyt]") {
  const bool bias = GENERATE(true, false);
  DyT<double> d({.dim = 5, .alpha_init = 0.8, .bias = bias});
  Rng rng(3);
  d.parameter("weight").value() = Tensor<double>::randn({5}, rng, 0.5, 1.0);
  if (bias) d.parameter("bias").value() = Tensor<double>::randn({5}, rng, 0.3);
  Parameter<double> x("x", randn({3, 4, 5}, 4, 2.0));
  require_gradcheck(gradcheck_module("dyt", d, x, [&](Var<double> v) { return d.forward(v); }), 1e-6);
}

TEST_CASE("dyt: float32 agrees with float64, and bad shapes are named", "[nn][dyt]") {
  // 1e-5, not 1e-6: dalpha sums 198 terms x u of both signs to ~1 % of their absolute sum, so the
  // float32 rounding of each term (not the summation, done in double) sets its error.
  require_precisions_agree(
      [](auto&, auto in) { return dyt(in[0], in[1], in[2], in[3]); },
      {randn({6, 33}, 5, 2.0), Tensor<double>::from({0.7}, {1}), randn({33}, 6), randn({33}, 7)}, 1e-5);
  Tape<double> tape;
  REQUIRE_THROWS_WITH(dyt(tape.constant(randn({2, 3}, 1)), tape.constant(randn({1}, 2)), tape.constant(randn({4}, 3))),
                      "dyt: gamma (4) must be (3) for input (2,3)");
}

TEST_CASE("dyt: the decoder's dyt_alpha reaches every DyT, blocks (peri too) and the final norm", "[nn][dyt]") {
  DecoderConfig c;
  c.vocab_size = 7, c.ctx = 4, c.layers = 2, c.heads = 1, c.dim = 4;
  c.norm = NormKind::parse("dyt"), c.placement = Placement::parse("peri"), c.dyt_alpha = 0.125;
  Decoder<double> model(c, 1);
  int alphas = 0;
  for (const auto& [name, p] : model.named_parameters())
    if (name.ends_with(".alpha")) {
      CHECK(p->value()[0] == 0.125);
      ++alphas;
    }
  CHECK(alphas == 2 * 4 + 1);  // norm1, norm2, attn_out_norm, mlp_out_norm per block; norm_f
  c.dyt_alpha = 0;
  REQUIRE_THROWS_WITH(Decoder<double>(c, 1), "config: dyt_alpha must be in (0, 100], got 0");
  c.dyt_alpha = 1e-300;  // inside (0, 100], but 0 once the model holds it in float32
  REQUIRE_THROWS_WITH(Decoder<double>(c, 1), Catch::Contains("config: dyt_alpha 1e-300 rounds to 0 in float32"));
}
