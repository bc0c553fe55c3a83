#include "nn_support.h"
#include "tapegrad/nn/decoder.h"
#include "tapegrad/nn/layernorm.h"

using namespace tapegrad;
using namespace tapegrad::nn;

namespace {
DecoderConfig tiny() {
  DecoderConfig c;
  c.vocab_size = 11, c.context = 8, c.n_layer = 2, c.n_head = 2, c.dim = 8;
  return c;
}
}  // namespace

TEST_CASE("module: stable dotted parameter names in registration order", "[nn]") {
  Decoder<float> model(tiny(), 1);
  std::vector<std::string> names;
  for (auto& [name, p] : model.named_parameters()) names.push_back(name);
  const std::vector<std::string> expect{
      "wte.weight",           "wpe.weight",           "blocks.0.norm1.weight",   "blocks.0.norm1.bias",
      "blocks.0.attn.qkv.weight", "blocks.0.attn.qkv.bias", "blocks.0.attn.proj.weight", "blocks.0.attn.proj.bias",
      "blocks.0.norm2.weight", "blocks.0.norm2.bias",  "blocks.0.mlp.fc.weight",  "blocks.0.mlp.proj.weight",
      "blocks.0.mlp.fc.bias", "blocks.0.mlp.proj.bias"};
  REQUIRE(names.size() == 2 + 12 * 2 + 2);
  CHECK(std::vector<std::string>(names.begin(), names.begin() + 14) == expect);
  CHECK(names[14] == "blocks.1.norm1.weight");
  CHECK(names.back() == "norm_f.bias");
  CHECK(model.parameter("blocks.1.attn.qkv.weight").shape() == Shape{24, 8});
  REQUIRE_THROWS_WITH(model.parameter("blocks.9.attn"), Catch::Contains("no parameter named 'blocks.9.attn'"));
}

TEST_CASE("module: parameter count, zero_grad, train/eval, summary", "[nn]") {
  Decoder<float> model(tiny(), 1);
  // wte 88 + wpe 64 + 2 blocks x (norms 32 + qkv 216 + proj 72 + fc 288 + proj 264) + norm_f 16
  CHECK(model.num_parameters() == 88 + 64 + 2 * (32 + 216 + 72 + 288 + 264) + 16);
  for (Parameter<float>* p : model.parameters()) p->grad.fill(1.f);
  model.zero_grad();
  for (Parameter<float>* p : model.parameters()) CHECK(p->grad[0] == 0.f);
  model.eval();
  CHECK_FALSE(model.block(1).attn().is_training());
  model.train();
  CHECK(model.block(1).attn().is_training());
  const std::string s = model.summary();
  CHECK_THAT(s, Catch::StartsWith("Decoder(vocab=11, context=8, layers=2, heads=2, dim=8, norm=layernorm"));
  CHECK_THAT(s, Catch::Contains("  (blocks): ModuleList(\n    (0): DecoderBlock(placement=pre, norm=layernorm\n"
                                "      (norm1): LayerNorm(8, eps=1e-05, elementwise_affine=true)\n"
                                "      (attn): CausalSelfAttention(dim=8, n_head=2, bias=true\n"
                                "        (qkv): Linear(in=8, out=24, bias=true)\n"));
}

TEST_CASE("module: state_dict names every parameter, load_state_dict copies, strictly by default", "[nn][state_dict]") {
  LayerNorm<double> a({.dim = 3}), b({.dim = 3});
  testing::randomize(a, 1);
  const StateDict<double> s = a.state_dict();
  REQUIRE(s.size() == 2);
  CHECK(s[0].first == "weight");
  CHECK(s[1].first == "bias");
  std::map<std::string, Tensor<double>> src;
  for (const auto& [name, t] : s) src[name] = *t;
  b.load_state_dict(src);
  CHECK(b.parameter("weight").value[2] == a.parameter("weight").value[2]);
  CHECK(b.parameter("bias").value[0] == a.parameter("bias").value[0]);
  src.erase("bias");
  REQUIRE_THROWS_WITH(b.load_state_dict(src), "LayerNorm: missing 1 tensor(s): 'bias'");
  CHECK(b.load_state_dict(src, {.strict = false}).missing == std::vector<std::string>{"bias"});
}
