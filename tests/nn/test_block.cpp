#include "nn_support.h"
#include "tapegrad/nn/block.h"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::testing;

TEST_CASE("block: pre-norm keeps the residual path — zero sub-layers give the identity", "[nn]") {
  const NormKind norm = GENERATE(from_range(all_norms()));
  DecoderBlock<double> block({.dim = 8, .heads = 2, .norm = norm});
  randomize(block, 1);
  block.attn().proj().weight().value().fill(0);
  block.attn().proj().bias()->value().fill(0);
  block.mlp().parameter("proj.weight").value().fill(0);
  block.mlp().parameter("proj.bias").value().fill(0);
  Tape<double> tape;
  const Tensor<double> x = randn({2, 3, 8}, 2);
  CHECK_THAT(block.forward(tape.constant(x)).value(), AllClose<double>(to_vector<double>(x.view()), 0, 0));
}

TEST_CASE("block: post-norm normalises the residual stream itself", "[nn]") {
  DecoderBlock<double> block({.dim = 8, .heads = 2, .norm = NormKind::parse("rmsnorm"), .placement = Placement::parse("post")});
  Tape<double> tape;
  Tensor<double> x = randn({1, 4, 8}, 3);
  for (int64_t i = 0; i < x.numel(); ++i) x[i] *= 100;
  // Unit norm weights at init: every output row has RMS 1 whatever the input scale.
  // (1 - 1e-5 off 1: eps = 1e-5 inside the square root, against a mean square of ~1.)
  CHECK_THAT(rms<double>(block.forward(tape.constant(x)).value()), Catch::Matchers::WithinAbs(1.0, 2e-5));
}

TEST_CASE("block: the probe reports residual RMS, norm-output RMS and max logit", "[nn]") {
  DecoderBlock<double> block({.dim = 8, .heads = 2, .norm = NormKind::parse("layernorm")});
  Tape<double> tape;
  Tensor<double> x = randn({2, 4, 8}, 4);
  for (int64_t i = 0; i < x.numel(); ++i) x[i] *= 7;
  BlockProbe probe;
  block.forward(tape.constant(x), &probe);
  CHECK_THAT(probe.residual_rms, Catch::Matchers::WithinRel(rms<double>(x.view()), 1e-12));
  CHECK_THAT(probe.norm_out_rms, Catch::Matchers::WithinAbs(1.0, 1e-6));  // LayerNorm output, unit gain
  // The attention alone, on what it read (pre-norm: Norm1(x)), reports the same largest logit.
  block.attn().forward(block.norm1().forward(tape.constant(x)));
  CHECK(probe.attention_logit == block.attn().last_max_logit());
  CHECK(probe.attention_logit > 0);
}

TEST_CASE("gradcheck: block", "[nn][gradcheck]") {
  const NormKind norm = GENERATE(from_range(all_norms()));
  const Placement placement = GENERATE(Placement::parse("pre"), Placement::parse("post"));
  const MlpKind mlp = GENERATE(MlpKind::parse("gelu"), MlpKind::parse("swiglu"));
  CAPTURE(to_string(norm), to_string(placement), to_string(mlp));
  DecoderBlock<double> block({.dim = 6, .heads = 2, .norm = norm, .placement = placement, .mlp = mlp, .mlp_hidden = 8});
  randomize(block, 7, 0.4);
  Parameter<double> x("x", randn({2, 3, 6}, 8));
  require_gradcheck(gradcheck_module("block " + to_string(norm) + " " + to_string(placement), block, x,
                                     [&](Var<double> v) { return block.forward(v); }));
}
