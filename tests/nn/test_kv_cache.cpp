// The KV cache against the full causal pass: the logits of positions fed one at a time (after a
// prefilled prompt) equal the rows of one pass over the whole sequence — in float64 to 1e-12, for
// every placement, with and without QK-norm, for every registered norm.
#include <cmath>

#include "nn_support.h"
#include "tapegrad/nn/decoder.h"
#include "tapegrad/nn/kv_cache.h"

using namespace tapegrad;
using namespace tapegrad::nn;

namespace {

DecoderConfig small(NormKind norm, Placement placement, NormKind qk_norm, MlpKind mlp) {
  DecoderConfig c;
  c.vocab_size = 11, c.ctx = 16, c.layers = 2, c.heads = 2, c.dim = 8;
  c.norm = norm, c.placement = placement, c.qk_norm = qk_norm, c.mlp = mlp, c.tie_head = false;
  return c;
}

// Largest |logit(incremental) - logit(full)| over `prefill` positions at once, then one at a time.
double cached_vs_full(Decoder<double>& model, const std::vector<int32_t>& ids, int64_t prefill) {
  const int64_t n = static_cast<int64_t>(ids.size()), V = model.config().vocab_size;
  Tape<double> full_tape;
  auto g1 = full_tape.no_grad();
  const auto full = model.forward(full_tape, ids, 1, n);
  KVCache<double> cache(model.config().layers, model.config().ctx, model.config().dim);
  double worst = 0;
  for (int64_t at = 0; at < n;) {
    const int64_t step = at == 0 ? prefill : 1;
    Tape<double> tape;
    auto g2 = tape.no_grad();
    const auto out = model.forward(tape, std::span<const int32_t>(ids.data() + at, static_cast<size_t>(step)), 1, step, {},
                                   nullptr, &cache);
    for (int64_t r = 0; r < step; ++r)
      for (int64_t v = 0; v < V; ++v)
        worst = std::max(worst, std::abs(out.logits.data()[r * V + v] - full.logits.data()[(at + r) * V + v]));
    at += step;
    CHECK(cache.length() == at);
  }
  return worst;
}

}  // namespace

TEST_CASE("kv cache: incremental logits equal the full pass, every placement, with and without QK-norm", "[nn][kv_cache]") {
  const Placement placement = GENERATE(Placement::parse("pre"), Placement::parse("post"), Placement::parse("peri"), Placement::parse("deepnorm"));
  const NormKind qk = GENERATE(NormKind::none(), NormKind::parse("rmsnorm"));
  const MlpKind mlp = GENERATE(MlpKind::parse("gelu"), MlpKind::parse("swiglu"));
  Decoder<double> model(small(NormKind::parse("layernorm"), placement, qk, mlp), 3);
  testing::randomize(model, 4, 0.4);  // activations of every size, not GPT-2's tiny init
  const std::vector<int32_t> ids{1, 7, 3, 3, 9, 0, 10, 2, 5, 5, 4, 8, 6, 1};
  INFO(to_string(placement) << " qk-norm " << qk.name());
  CHECK(cached_vs_full(model, ids, 5) < 1e-12);
  CHECK(cached_vs_full(model, ids, 1) < 1e-12);
}

TEST_CASE("kv cache: every registered norm", "[nn][kv_cache][registry]") {
  for (const NormKind norm : all_norms()) {
    Decoder<double> model(small(norm, Placement::parse("pre"), NormKind::none(), MlpKind::parse("gelu")), 5);
    testing::randomize(model, 6, 0.4);
    INFO(norm.name());
    CHECK(cached_vs_full(model, {4, 4, 2, 9, 1, 0, 3, 7, 7, 10, 6, 5, 8, 2, 1, 3}, 3) < 1e-12);  // to the full context
  }
}

TEST_CASE("kv cache: misuse is named", "[nn][kv_cache][errors]") {
  Decoder<double> model(small(NormKind::parse("rmsnorm"), Placement::parse("pre"), NormKind::none(), MlpKind::parse("gelu")), 1);
  KVCache<double> cache(2, 16, 8);
  Tape<double> tape;
  auto guard = tape.no_grad();
  const std::vector<int32_t> ids(16, 1);
  model.forward(tape, std::span<const int32_t>(ids.data(), 12), 1, 12, {}, nullptr, &cache);
  REQUIRE_THROWS_WITH(model.forward(tape, std::span<const int32_t>(ids.data(), 5), 1, 5, {}, nullptr, &cache),
                      "Decoder: sequence length 12 + 5 exceeds the context 16");
  REQUIRE_THROWS_WITH(model.forward(tape, std::span<const int32_t>(ids.data(), 4), 2, 2, {}, nullptr, &cache),
                      "Decoder: a KV cache serves one sequence without targets (generation)");
  KVCache<double> wide(2, 16, 12);
  REQUIRE_THROWS_WITH(model.forward(tape, std::span<const int32_t>(ids.data(), 1), 1, 1, {}, nullptr, &wide),
                      "Decoder: a KV cache of 2 layers x 12 for a model of 2 x 8");
  Tape<double> training;  // a cache is for inference: no gradient flows through it
  KVCache<double> fresh(2, 16, 8);
  REQUIRE_THROWS_WITH(model.forward(training, std::span<const int32_t>(ids.data(), 3), 1, 3, {}, nullptr, &fresh),
                      "cached_self_attention: inference only (run it under Tape::no_grad)");
}
