#include "nn_support.h"
#include "tapegrad/nn/decoder.h"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::testing;

namespace {

DecoderConfig tiny(NormKind norm, Placement placement) {
  DecoderConfig c;
  c.vocab_size = 7, c.ctx = 5, c.layers = 2, c.heads = 2, c.dim = 6, c.mlp_hidden = 8;
  c.norm = norm, c.placement = placement;
  return c;
}



void gradcheck_decoder(const DecoderConfig& c, const std::string& name, GradcheckOptions options = {}) {
  Decoder<double> model(c, 1);
  // Parameters ~ N(0, 0.5^2), far from GPT-2's 0.02: every parameter then has a gradient well
  // above the finite differences' round-off (~5e-10 absolute here). At 0.3, SwiGLU's product of
  // two small activations left blocks.1.mlp.fc.weight with gradients ~1e-3 and a relative error
  // of 7e-7 that was all round-off (it fell to 6e-8 with h = 1e-5).
  randomize(model, 2, 0.5);
  // Norm parameters around 1, as trained: gains drawn around 0 would collapse what a norm hands
  // on (a scalar QK gain near 0 makes every attention logit ~0, its own gradient ~1e-4).
  // Every norm of a block (norm1, norm2, QK-norms, peri's output norms), found by name.
  for (int64_t i = 0; i < c.layers; ++i)
    for (auto& [param_name, p] : model.block(i).named_parameters())
      if (param_name.find("norm") != std::string::npos)
        for (int64_t k = 0; k < p->numel(); ++k) p->value()[k] += 1.0;
  const TokenBatch b = random_batch(2 * 4, c.vocab_size, 3);
  auto f = [&](Tape<double>& tape) { return model.forward(tape, b.ids, 2, 4, b.targets).loss; };
  const GradcheckResult r = gradcheck(name, f, model.parameters(), options);
  INFO(r.message);
  REQUIRE(r.ok);
  // The differences' round-off here is ~5e-10 absolute, so a relative 1e-6 is in reach only for
  // gradients above ~1e-3. Smaller ones occur where scale-invariant norms follow each other (peri
  // with ScaleNorm normalises every sub-layer's output: the gradients are ~3e-4, norm2.g's ~2e-6):
  // there the absolute error is what holds.
  for (const GradcheckInput& in : r.inputs) {
    INFO(name << ": " << in.name << " relative " << in.rel_error << ", absolute " << in.abs_error << ", |gradient| "
              << in.max_numeric);
    if (in.max_numeric > 1e-3) CHECK(in.rel_error < 1e-6);
    else CHECK(in.abs_error < 2e-9);
  }
}

}  // namespace

// Every registered norm in every placement, without naming one: a norm (or placement) added to
// the registry is gradchecked inside the decoder by this test as it stands.
TEST_CASE("gradcheck: decoder, every registered norm", "[nn][gradcheck]") {
  const NormKind norm = GENERATE(from_range(all_norms()));
  const Placement placement = GENERATE(from_range(all_placements()));
  gradcheck_decoder(tiny(norm, placement), "decoder " + to_string(norm) + " " + to_string(placement));
}
TEST_CASE("gradcheck: decoder untied head, swiglu, no bias", "[nn][gradcheck]") {
  DecoderConfig c = tiny(NormKind::parse("rmsnorm"), Placement::parse("pre"));
  c.tie_head = false, c.mlp = MlpKind::parse("swiglu"), c.bias = false;
  gradcheck_decoder(c, "decoder untied swiglu");
}

TEST_CASE("gradcheck: decoder qk-norm", "[nn][gradcheck]") {
  const NormKind kind = GENERATE(from_range(qk_norms(/*with_none=*/false)));
  DecoderConfig c = tiny(NormKind::parse("layernorm"), Placement::parse("pre"));
  c.qk_norm = kind;
  // A QK-norm with one scalar gain (ScaleNorm's g) collects its gradient from every logit, terms
  // that largely cancel: ~1e-4 here, so at h = 1e-6 the differences' round-off (~3e-10) alone is a
  // relative error of ~1e-5. At h = 2e-5 round-off falls 20x while truncation (h^2 f'''/6) stays
  // below it: 1.3e-7. (The attention-level qk-norm gradcheck holds 1e-6 at h = 1e-6.)
  GradcheckOptions o;
  o.h = 2e-5;
  gradcheck_decoder(c, "decoder qk-norm " + to_string(kind), o);
}

// The published recipes' pieces (lm/recipes.h): the learned embedding scale with DyT's split
// alpha0 and no beta, the embedding norm, the fixed scale without a final norm. Each inside the
// whole decoder, so their gradients flow through everything after them.
TEST_CASE("gradcheck: decoder with the recipes' embedding treatments", "[nn][gradcheck]") {
  DecoderConfig c = tiny(NormKind::parse("dyt"), Placement::parse("pre"));
  c.embed_scale = EmbedScale::kLearned, c.embed_scale_init = 1.7, c.dyt_alpha_attn = 1.3, c.dyt_beta = false;
  gradcheck_decoder(c, "decoder dyt, learned embedding scale, no beta");
  c.embed_scale_positions = true, c.embed_scale_init = 0, c.embed_scale_rule = "unit-input", c.tie_head = false;
  gradcheck_decoder(c, "decoder dyt, learned scale on token + position (unit-input), untied head");
  c = tiny(NormKind::parse("layernorm"), Placement::parse("peri"));
  c.embed_norm = true;
  gradcheck_decoder(c, "decoder peri, embedding norm");
  c = tiny(NormKind::parse("rmsnorm"), Placement::parse("deepnorm"));
  c.embed_scale = EmbedScale::kFixed, c.final_norm = false;
  gradcheck_decoder(c, "decoder deepnorm, fixed embedding scale, no final norm");
}

TEST_CASE("decoder: the recipes' pieces are where their papers put them", "[nn]") {
  DecoderConfig c = tiny(NormKind::parse("dyt"), Placement::parse("pre"));
  c.embed_scale = EmbedScale::kLearned, c.dyt_alpha = 0.25, c.dyt_alpha_attn = 0.75, c.dyt_beta = false;
  Decoder<double> model(c, 1);
  const auto params = model.named_parameters();
  const auto value = [&](const std::string& name) {
    for (const auto& [n, p] : params)
      if (n == name) return p->value()[0];
    FAIL("no parameter " << name);
    return 0.0;
  };
  CHECK(value("embed_scale.weight") == Approx(std::sqrt(6.0)));  // sqrt(dim) when no init is given
  CHECK(value("blocks.0.norm1.alpha") == 0.75);  // the DyT before attention
  CHECK(value("blocks.0.norm2.alpha") == 0.25);  // the others: the FFN input's ...
  CHECK(value("norm_f.alpha") == 0.25);           // ... and the final one
  for (const auto& [n, p] : params) CHECK((n.find("bias") == std::string::npos || n.find("norm") == std::string::npos));
  // The embeddings: x = s * wte[token] + wpe[position], row by row.
  Tape<double> tape;
  const std::vector<int32_t> ids{3, 1};
  c.layers = 1;
  DecoderConfig fixed = tiny(NormKind::none(), Placement::parse("pre"));
  fixed.embed_scale = EmbedScale::kFixed, fixed.embed_scale_init = 3.0;
  Decoder<double> plain(tiny(NormKind::none(), Placement::parse("pre")), 5), scaled(fixed, 5);  // same seed: same weights
  const Var<double> a = plain.forward(tape, ids, 1, 2).logits, b = scaled.forward(tape, ids, 1, 2).logits;
  CHECK(a.value()[0] != b.value()[0]);  // the scale reaches the logits
  // With embed_scale_positions the scale multiplies what enters the first block: x = s (tok + pos),
  // whose RMS is s times that of tok + pos. Without it, x = s tok + pos.
  DecoderConfig on_inputs = fixed;
  on_inputs.embed_scale_positions = true;
  Decoder<double> scaled_inputs(on_inputs, 5);
  DecoderProbe p_plain, p_tokens, p_inputs;
  plain.forward(tape, ids, 1, 2, {}, &p_plain);
  scaled.forward(tape, ids, 1, 2, {}, &p_tokens);
  scaled_inputs.forward(tape, ids, 1, 2, {}, &p_inputs);
  CHECK(p_inputs.blocks[0].residual_rms == Approx(3.0 * p_plain.blocks[0].residual_rms).epsilon(1e-12));
  double ss = 0;  // RMS of 3 tok + pos, by hand
  for (int t = 0; t < 2; ++t)
    for (int64_t k = 0; k < fixed.dim; ++k) {
      const double v = 3.0 * scaled.wte().weight().value()[ids[static_cast<size_t>(t)] * fixed.dim + k] +
                       scaled.wpe().weight().value()[t * fixed.dim + k];
      ss += v * v;
    }
  CHECK(p_tokens.blocks[0].residual_rms == Approx(std::sqrt(ss / (2.0 * static_cast<double>(fixed.dim)))).epsilon(1e-12));
  // unit-input: s0 = 1 / (alpha0 x init_std), alpha0 the first DyT's (1 for other norms).
  DecoderConfig rule = c;
  rule.embed_scale_rule = "unit-input";
  CHECK(rule.embed_scale_value() == Approx(1.0 / (0.75 * 0.02)).epsilon(1e-12));
  rule.norm = NormKind::parse("rmsnorm");
  CHECK(rule.embed_scale_value() == Approx(50.0).epsilon(1e-12));
  rule.embed_scale_init = 2.5;
  CHECK(rule.embed_scale_value() == 2.5);
  rule.embed_scale_rule = "huge";
  REQUIRE_THROWS_WITH(rule.validate(), "config: embed_scale_rule must be sqrt-dim or unit-input, got 'huge'");
  // Older checkpoints' configs, without the recipes' fields, load as the model they described.
  nlohmann::json j = to_json(tiny(NormKind::parse("layernorm"), Placement::parse("pre")));
  for (const char* key : {"dyt_alpha_attn", "dyt_beta", "embed_scale", "embed_scale_init", "embed_norm",
                          "embed_scale_positions", "embed_scale_rule"})
    j.erase(key);
  const DecoderConfig old = decoder_config_from_json(j);
  CHECK(old == tiny(NormKind::parse("layernorm"), Placement::parse("pre")));
  j["embed_scale"] = "huge";
  REQUIRE_THROWS_WITH(decoder_config_from_json(j), "config: embed_scale: unknown embedding scale 'huge' (none, fixed or learned)");
}

TEST_CASE("decoder: GPT-2 initialisation and a loss of ln(V) at init", "[nn]") {
  DecoderConfig c;  // the default: L4 H4 C128, V65, T64
  Decoder<float> model(c, 42);
  auto std_of = [](const Tensor<float>& t) {
    double ss = 0;
    for (int64_t i = 0; i < t.numel(); ++i) ss += static_cast<double>(t[i]) * t[i];
    return std::sqrt(ss / t.numel());
  };
  CHECK_THAT(std_of(model.parameter("blocks.0.attn.qkv.weight").value()), Catch::Matchers::WithinRel(0.02, 0.02));
  CHECK_THAT(std_of(model.parameter("blocks.3.mlp.proj.weight").value()),
             Catch::Matchers::WithinRel(0.02 / std::sqrt(8.0), 0.02));
  CHECK(model.parameter("blocks.0.norm1.weight").value()[5] == 1.f);
  CHECK(model.parameter("blocks.0.attn.qkv.bias").value()[5] == 0.f);
  // Same seed, same weights; another seed, other weights.
  Decoder<float> again(c, 42), other(c, 43);
  CHECK(again.parameter("wte.weight").value()[17] == model.parameter("wte.weight").value()[17]);
  CHECK(other.parameter("wte.weight").value()[17] != model.parameter("wte.weight").value()[17]);

  Tape<float> tape;
  const TokenBatch b = random_batch(4 * 64, 65, 1);
  auto out = model.forward(tape, b.ids, 4, 64, b.targets);
  CHECK(out.logits.shape() == Shape{4, 64, 65});
  CHECK_THAT(out.loss.value()[0], Catch::Matchers::WithinAbs(std::log(65.0), 0.05));  // 4.174
  CHECK(model.num_parameters() == 65 * 128 + 64 * 128 + 4 * (4 * 128 + 3 * 128 * 128 + 3 * 128 + 128 * 128 + 128 +
                                                             2 * 128 * 512 + 512 + 128) + 2 * 128);
}

TEST_CASE("decoder: config JSON round-trip, strict parsing, clear errors", "[nn]") {
  DecoderConfig c = tiny(NormKind::parse("rmsnorm"), Placement::parse("post"));
  c.mlp = MlpKind::parse("swiglu"), c.qk_norm = NormKind::parse("layernorm");
  CHECK(decoder_config_from_json(to_json(c)) == c);
  auto j = to_json(c);
  j.erase("qk_norm");  // configs written before QK-norm existed: it was off
  CHECK(decoder_config_from_json(j).qk_norm == NormKind::none());
  j = to_json(c);
  j.erase("heads");
  REQUIRE_THROWS_WITH(decoder_config_from_json(j), "config: missing field 'heads'");
  j = to_json(c);
  j["n_heads"] = 3;
  REQUIRE_THROWS_WITH(decoder_config_from_json(j), "config: unknown field 'n_heads'");
  // Checkpoints written before the shape took the flags' names (n_layer, n_head, context) load.
  j = to_json(c);
  for (const auto& [now, was] : {std::pair{"layers", "n_layer"}, {"heads", "n_head"}, {"ctx", "context"}}) {
    j[was] = j[now];
    j.erase(now);
  }
  CHECK(decoder_config_from_json(j) == c);
  j["heads"] = c.heads;
  REQUIRE_THROWS_WITH(decoder_config_from_json(j), "config: both 'heads' and its former name 'n_head'");
  j.erase("heads");
  j["n_head"] = "four";  // an error under a former name says what the file wrote
  REQUIRE_THROWS_WITH(decoder_config_from_json(j), Catch::Contains("'heads' must be an integer") &&
                                                       Catch::EndsWith("(written as 'n_head')"));
  j = to_json(c);
  j["norm"] = "batchnorm";
  REQUIRE_THROWS_WITH(decoder_config_from_json(j), "config: norm: unknown norm 'batchnorm'; known: " + [] {
    std::string known;
    for (const std::string& n : norm_names()) known += (known.empty() ? "" : ", ") + n;
    return known;
  }());
  j = to_json(c);
  j["dim"] = "wide";
  REQUIRE_THROWS_WITH(decoder_config_from_json(j), "config: field 'dim' must be an integer, got string \"wide\"");
  j["dim"] = nullptr;
  REQUIRE_THROWS_WITH(decoder_config_from_json(j), "config: field 'dim' must be an integer, got null");
  j["dim"] = 1.2e45;  // found by fuzzing: once a double-to-integer cast, undefined behaviour
  REQUIRE_THROWS_WITH(decoder_config_from_json(j), Catch::StartsWith("config: field 'dim' must be an integer, got number"));
  j["dim"] = 8.0;
  REQUIRE_THROWS_WITH(decoder_config_from_json(j), Catch::StartsWith("config: field 'dim' must be an integer"));
  j = to_json(c);
  j["heads"] = 4;
  REQUIRE_THROWS_WITH(decoder_config_from_json(j), "config: heads = 4 does not divide dim = 6");
  CHECK(decoder_config_merge(c, {{"layers", 3}}).layers == 3);
}

TEST_CASE("decoder: bad batches are named", "[nn][errors]") {
  Decoder<float> model(tiny(NormKind::parse("layernorm"), Placement::parse("pre")), 1);
  Tape<float> tape;
  const TokenBatch b = random_batch(12, 7, 1);
  REQUIRE_THROWS_WITH(model.forward(tape, b.ids, 2, 6), "Decoder: sequence length 6 exceeds the context 5");
  REQUIRE_THROWS_WITH(model.forward(tape, b.ids, 2, 5), "Decoder: 12 token ids for B*T = 10");
  std::vector<int32_t> bad(10, 0);
  bad[3] = 7;
  REQUIRE_THROWS_WITH(model.forward(tape, bad, 2, 5), Catch::Contains("id 7 at position 3 is out of range"));
}
