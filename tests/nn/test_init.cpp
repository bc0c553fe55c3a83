// Modules own their initialisation (init.h): nothing starts at silent zeros, the defaults are
// torch's, construction is reproducible under manual_seed, and a whole model re-initialises
// from a seed through reset_parameters.
#include "nn_support.h"
#include "tapegrad/nn/decoder.h"
#include "tapegrad/nn/embedding.h"
#include "tapegrad/nn/init.h"
#include "tapegrad/nn/linear.h"
#include "tapegrad/ops/cross_entropy.h"
#include "tapegrad/ops/gelu.h"
#include "tapegrad/optim/adamw.h"

using namespace tapegrad;
using namespace tapegrad::nn;

namespace {
double std_of(const Tensor<float>& t) {
  double ss = 0;
  for (int64_t i = 0; i < t.numel(); ++i) ss += static_cast<double>(t[i]) * t[i];
  return std::sqrt(ss / static_cast<double>(t.numel()));
}
double max_abs(const Tensor<float>& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::abs(static_cast<double>(t[i])));
  return m;
}
}  // namespace

TEST_CASE("init: Linear and Embedding start at torch's defaults, never at zero", "[nn][init]") {
  manual_seed(1);
  Linear<float> lin({.in = 64, .out = 256});
  // U(-1/8, 1/8): std 1/(8 sqrt(3)) = 0.0722, every value inside the bound.
  CHECK(max_abs(lin.weight().value()) <= 0.125);
  CHECK_THAT(std_of(lin.weight().value()), Catch::Matchers::WithinRel(0.125 / std::sqrt(3.0), 0.03));
  CHECK(max_abs(lin.bias()->value()) > 0.05);
  Embedding<float> emb({.num = 100, .dim = 64});
  CHECK_THAT(std_of(emb.weight().value()), Catch::Matchers::WithinRel(1.0, 0.03));
  // GPT-2's scheme is an option, not a rule applied by name from outside.
  Linear<float> gpt({.in = 64, .out = 256, .bias = true, .init_std = 0.02});
  CHECK_THAT(std_of(gpt.weight().value()), Catch::Matchers::WithinRel(0.02, 0.03));
  CHECK(max_abs(gpt.bias()->value()) == 0.0);
}

TEST_CASE("init: manual_seed makes construction reproducible", "[nn][init]") {
  manual_seed(7);
  Linear<float> a({.in = 5, .out = 3});
  manual_seed(7);
  Linear<float> b({.in = 5, .out = 3});
  Linear<float> c({.in = 5, .out = 3});
  CHECK(std::equal(a.weight().value().span().begin(), a.weight().value().span().end(), b.weight().value().span().begin()));
  CHECK(!std::equal(b.weight().value().span().begin(), b.weight().value().span().end(), c.weight().value().span().begin()));
}

// The failure the issue reported: a model built from nn modules that forgot to initialise stayed
// at ln 2 (0.6931 -> 0.6924 over 300 AdamW steps, weights exactly 0). Now it learns XOR-like data.
TEST_CASE("init: a small model built from modules trains without an explicit init", "[nn][init]") {
  manual_seed(3);
  Linear<float> l1({.in = 2, .out = 16}), l2({.in = 16, .out = 2});
  std::vector<Parameter<float>*> params = l1.parameters();
  for (Parameter<float>* p : l2.parameters()) params.push_back(p);
  AdamW<float> opt(params, {.weight_decay = 0});
  Rng rng(4);
  const int64_t n = 128;
  Tensor<float> x(Shape{n, 2});
  std::vector<int32_t> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    x.at(i, 0) = static_cast<float>(2 * rng.uniform() - 1), x.at(i, 1) = static_cast<float>(2 * rng.uniform() - 1);
    y[static_cast<size_t>(i)] = x.at(i, 0) * x.at(i, 1) > 0;
  }
  float first = 0, last = 0;
  for (int step = 0; step < 300; ++step) {
    Tape<float> tape;
    for (Parameter<float>* p : params) p->grad().fill(0);
    Var<float> loss = cross_entropy(l2.forward(gelu(l1.forward(tape.constant(x)))), y);
    tape.backward(loss);
    opt.step(3e-2);
    (step == 0 ? first : last) = loss.value()[0];
  }
  INFO("loss " << first << " -> " << last);
  CHECK_THAT(first, Catch::Matchers::WithinAbs(std::log(2.0), 0.05));
  CHECK(last < 0.25f);
}

TEST_CASE("init: a decoder re-initialises through reset_parameters, norms keep their own constants", "[nn][init]") {
  DecoderConfig c;
  c.vocab_size = 11, c.ctx = 6, c.layers = 2, c.heads = 2, c.dim = 8;
  c.qk_norm = NormKind::parse("rmsnorm");
  Decoder<float> a(c, 5), b(c, 6);
  Rng rng(5);
  b.reset_parameters(rng);  // == init_weights(5)
  auto pa = a.named_parameters(), pb = b.named_parameters();
  REQUIRE(pa.size() == pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    INFO(pa[i].first);
    const auto& va = pa[i].second->value();
    const auto& vb = pb[i].second->value();
    CHECK(std::equal(va.span().begin(), va.span().end(), vb.span().begin()));
  }
  CHECK(a.parameter("blocks.0.norm1.weight").value()[0] == 1.0f);
  CHECK(a.parameter("blocks.1.attn.q_norm.weight").value()[3] == 1.0f);
  CHECK(a.parameter("blocks.0.norm1.bias").value()[0] == 0.0f);
  // GPT-2's residual projections: std init_std / sqrt(2 L) = 0.01.
  Decoder<float> wide([] {
    DecoderConfig w;
    w.layers = 2;
    return w;
  }(), 1);
  CHECK_THAT(std_of(wide.parameter("blocks.0.attn.proj.weight").value()), Catch::Matchers::WithinRel(0.01, 0.03));
  CHECK_THAT(std_of(wide.parameter("blocks.1.mlp.fc.weight").value()), Catch::Matchers::WithinRel(0.02, 0.03));
}
