// The placement and MLP registries are open: an entry registered by the program's own code is
// built, differentiated and named like a built-in one; bad registrations are refused by name.
#include "nn_support.h"
#include "tapegrad/nn/activation.h"
#include "tapegrad/nn/block.h"
#include "tapegrad/nn/decoder.h"
#include "tapegrad/nn/linear.h"
#include "tapegrad/nn/sequential.h"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::testing;

namespace {

// Norm(X + F(Norm(X))): a norm before the sub-layer and one after the residual add — the one
// combination of the built-ins' parts none of them uses, so the block needs its extra sum norms.
Placement pre_and_sum() {
  static const Placement p = register_placement(
      {.name = "test-pre-and-sum", .description = "Norm(X + F(Norm(X)))", .norm_input = true, .norm_sum = true});
  return p;
}

// W2 tanh(W1 x) from library modules (a Sequential), as a program would register its own MLP.
template <typename T>
std::unique_ptr<UnaryModule<T>> make_tanh_mlp(const MlpSpec& s) {
  auto m = std::make_unique<Sequential<T>>();
  m->template emplace_back<Linear<T>>(LinearOptions{.in = s.dim, .out = s.hidden, .bias = s.bias});
  m->template emplace_back<Tanh<T>>();
  m->template emplace_back<Linear<T>>(LinearOptions{.in = s.hidden, .out = s.dim, .bias = s.bias});
  return m;
}
MlpKind tanh_mlp() {
  static const MlpKind k = register_mlp({.name = "test-tanh",
                                         .description = "W2 tanh(W1 x)",
                                         .make_float = make_tanh_mlp<float>,
                                         .make_double = make_tanh_mlp<double>,
                                         .default_hidden = [](int64_t dim) { return 2 * dim; }});
  return k;
}

}  // namespace

TEST_CASE("registries: a registered placement and MLP build a block with their parts, by name", "[nn][registry]") {
  const Placement p = pre_and_sum();
  const MlpKind m = tanh_mlp();
  CHECK(Placement::parse("test-pre-and-sum") == p);
  CHECK(MlpKind::parse("test-tanh") == m);
  CHECK(to_string(p) == "test-pre-and-sum");
  CHECK_THAT(placement_help(), Catch::Contains("test-pre-and-sum Norm(X + F(Norm(X)))"));
  CHECK_THAT(mlp_kind_help(), Catch::Contains("test-tanh: W2 tanh(W1 x)"));
  DecoderBlock<double> block({.dim = 6, .heads = 2, .norm = NormKind::parse("rmsnorm"), .placement = p, .mlp = m});
  std::vector<std::string> names;
  for (const auto& [name, param] : block.named_parameters()) names.push_back(name);
  // norm1, attention, norm2, the MLP (hidden 2 dim: its default), then the two sum norms.
  CHECK(names == std::vector<std::string>{"norm1.weight", "attn.qkv.weight", "attn.qkv.bias", "attn.proj.weight",
                                          "attn.proj.bias", "norm2.weight", "mlp.0.weight", "mlp.0.bias", "mlp.2.weight",
                                          "mlp.2.bias", "attn_sum_norm.weight", "mlp_sum_norm.weight"});
  CHECK(block.parameter("mlp.0.weight").value().shape() == Shape{12, 6});
}

TEST_CASE("registries: the registered placement's block is Norm(X + F(Norm(X))), exactly", "[nn][registry]") {
  // With zero sub-layers F = 0 (their output projections zeroed), the block is Norm(Norm(X + 0)):
  // RMSNorm twice, i.e. the rows of X scaled to RMS 1.
  DecoderBlock<double> block({.dim = 8, .heads = 2, .norm = NormKind::parse("rmsnorm"), .placement = pre_and_sum(),
                              .mlp = tanh_mlp(), .norm_eps = 0});
  randomize(block, 3);
  for (const char* name : {"attn.proj.weight", "attn.proj.bias", "mlp.2.weight", "mlp.2.bias"}) block.parameter(name).value().fill(0);
  for (const char* name : {"norm1.weight", "norm2.weight", "attn_sum_norm.weight", "mlp_sum_norm.weight"})
    block.parameter(name).value().fill(1);
  const Tensor<double> x = randn({2, 3, 8}, 4);
  Tape<double> tape;
  const std::vector<double> y = to_vector<double>(block.forward(tape.constant(x)).value());
  for (int64_t r = 0; r < 6; ++r) {
    double ms = 0;
    for (int64_t i = 0; i < 8; ++i) ms += x[r * 8 + i] * x[r * 8 + i] / 8;
    for (int64_t i = 0; i < 8; ++i) CHECK_THAT(y[r * 8 + i], Catch::Matchers::WithinRel(x[r * 8 + i] / std::sqrt(ms), 1e-12));
  }
}

TEST_CASE("gradcheck: a block with a registered placement and MLP", "[nn][gradcheck][registry]") {
  const NormKind norm = GENERATE(NormKind::parse("layernorm"), NormKind::parse("rmsnorm"));
  DecoderBlock<double> block({.dim = 6, .heads = 2, .norm = norm, .placement = pre_and_sum(), .mlp = tanh_mlp()});
  randomize(block, 7, 0.4);
  Parameter<double> x("x", randn({2, 3, 6}, 8));
  require_gradcheck(gradcheck_module("block " + to_string(norm) + " test-pre-and-sum test-tanh", block, x,
                                     [&](Var<double> v) { return block.forward(v); }));
}

TEST_CASE("registries: a decoder of a registered placement and MLP saves and reloads by name", "[nn][registry]") {
  DecoderConfig c;
  c.vocab_size = 11, c.ctx = 8, c.layers = 2, c.heads = 2, c.dim = 8;
  c.placement = pre_and_sum(), c.mlp = tanh_mlp();
  const nlohmann::json j = to_json(c);
  CHECK(j["placement"] == "test-pre-and-sum");
  CHECK(j["mlp"] == "test-tanh");
  CHECK(decoder_config_from_json(j) == c);
}

TEST_CASE("registries: bad registrations are refused, naming the entry", "[nn][registry]") {
  REQUIRE_THROWS_WITH(register_placement({.name = "pre", .description = "again", .norm_input = true}),
                      "placement name 'pre' is taken (by: X + F(Norm(X))); choose another name");
  REQUIRE_THROWS_WITH(register_placement({.name = "test-bare", .description = "X + F(X)"}),
                      Catch::StartsWith("placement 'test-bare' places no norm"));
  REQUIRE_THROWS_WITH(register_mlp({.name = "test-empty", .description = "no factories"}),
                      "mlp 'test-empty': make_float, make_double and default_hidden are all needed");
  REQUIRE_THROWS_WITH(Placement::parse("sandwich"), "unknown placement 'sandwich'; known: " + placement_registry().known());
  REQUIRE_THROWS_WITH(MlpKind::parse("moe"), "unknown mlp 'moe'; known: " + mlp_registry().known());
}
