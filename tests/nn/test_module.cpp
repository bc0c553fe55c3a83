#include "nn_support.h"
#include "tapegrad/nn/decoder.h"
#include "tapegrad/nn/activation.h"
#include "tapegrad/nn/layernorm.h"
#include "tapegrad/nn/linear.h"
#include "tapegrad/nn/sequential.h"
#include "tapegrad/ops.h"

using namespace tapegrad;
using namespace tapegrad::nn;

namespace {
DecoderConfig tiny() {
  DecoderConfig c;
  c.vocab_size = 11, c.ctx = 8, c.layers = 2, c.heads = 2, c.dim = 8;
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
  for (Parameter<float>* p : model.parameters()) p->grad().fill(1.f);
  model.zero_grad();
  for (Parameter<float>* p : model.parameters()) CHECK(p->grad()[0] == 0.f);
  model.eval();
  CHECK_FALSE(model.block(1).attn().is_training());
  model.train();
  CHECK(model.block(1).attn().is_training());
  const std::string s = model.summary();
  CHECK_THAT(s, Catch::StartsWith("Decoder(vocab=11, ctx=8, layers=2, heads=2, dim=8, norm=layernorm"));
  CHECK_THAT(s, Catch::Contains("  (blocks): ModuleList(\n    (0): DecoderBlock(placement=pre, norm=layernorm\n"
                                "      (norm1): LayerNorm(8, eps=1e-05, elementwise_affine=true)\n"
                                "      (attn): CausalSelfAttention(dim=8, heads=2, bias=true\n"
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
  CHECK(b.parameter("weight").value()[2] == a.parameter("weight").value()[2]);
  CHECK(b.parameter("bias").value()[0] == a.parameter("bias").value()[0]);
  src.erase("bias");
  REQUIRE_THROWS_WITH(b.load_state_dict(src), "LayerNorm: missing 1 tensor(s): 'bias'");
  CHECK(b.load_state_dict(src, {.strict = false}).missing == std::vector<std::string>{"bias"});
}

namespace {
// A model built and returned by a function, as a user's factory would.
Sequential<double> make_mlp() {
  Sequential<double> m;
  m.emplace_back<Linear<double>>(LinearOptions{.in = 3, .out = 5});
  m.emplace_back<Tanh<double>>();
  m.emplace_back<Linear<double>>(LinearOptions{.in = 5, .out = 2});
  return m;
}
double loss_of(UnaryModule<double>& m, const Tensor<double>& x) {
  Tape<double> tape;
  return sum(m.forward(tape.constant(x))).value()[0];
}
}  // namespace

TEST_CASE("module: modules move — returned, kept in a vector, moved into — with their parameters in place", "[nn]") {
  const Tensor<double> x = testing::randn({4, 3}, 1);
  Sequential<double> a = make_mlp();
  const std::vector<Parameter<double>*> params = a.parameters();
  const double before = loss_of(a, x);
  Sequential<double> b = std::move(a);
  CHECK(b.parameters() == params);  // the same parameter objects: an optimizer over them still holds
  CHECK(loss_of(b, x) == before);
  CHECK(b.named_parameters()[2].first == "2.weight");
  // In a vector that reallocates as it grows.
  std::vector<Linear<double>> layers;
  for (int i = 0; i < 9; ++i) layers.emplace_back(LinearOptions{.in = 3, .out = 3});
  const Parameter<double>* first = layers[0].parameters()[0];
  for (int i = 0; i < 40; ++i) layers.emplace_back(LinearOptions{.in = 3, .out = 3});
  CHECK(layers[0].parameters()[0] == first);
  // A decoder moved into another variable trains as the original would have.
  Decoder<double> d(tiny(), 3), twin(tiny(), 3);
  Decoder<double> moved(std::move(d));
  Tape<double> t1, t2;
  const std::vector<int32_t> ids{1, 2, 3, 4, 5, 6}, targets{2, 3, 4, 5, 6, 7};
  CHECK(moved.forward(t1, ids, 2, 3, targets).loss.value()[0] == twin.forward(t2, ids, 2, 3, targets).loss.value()[0]);
  // Move-assigned: the target now holds the source's parameters.
  Sequential<double> c;
  c = std::move(b);
  CHECK(c.parameters() == params);
  CHECK(loss_of(c, x) == before);
}

TEST_CASE("module: forward and backward hooks see every pass of a module inside a decoder", "[nn][hooks]") {
  Decoder<double> model(tiny(), 4);
  DecoderBlock<double>& block = model.block(1);
  // A forward hook on a block, one on the norm inside it, a backward hook on that norm.
  std::vector<double> block_out_rms;
  int norm_calls = 0;
  std::vector<double> grad_seen;
  const int64_t fwd = block.register_forward_hook([&](UnaryModule<double>&, Var<double> in, Var<double> out) {
    CHECK(in.shape() == out.shape());
    block_out_rms.push_back(rms<double>(out.value()));
  });
  block.norm2().register_forward_hook([&](UnaryModule<double>& m, Var<double>, Var<double>) {
    CHECK(&m == &block.norm2());
    ++norm_calls;
  });
  Var<double> norm_out;
  block.norm2().register_forward_hook([&](UnaryModule<double>&, Var<double>, Var<double> out) { norm_out = out; });
  block.norm2().register_backward_hook([&](UnaryModule<double>&, TensorView<const double> g) {
    grad_seen.assign(g.data(), g.data() + g.numel());
  });
  Tape<double> tape;
  const std::vector<int32_t> ids{1, 2, 3, 4, 5, 6}, targets{2, 3, 4, 5, 6, 7};
  const auto out = model.forward(tape, ids, 2, 3, targets);
  REQUIRE(block_out_rms.size() == 1);
  CHECK(block_out_rms[0] > 0);
  CHECK(norm_calls == 1);
  tape.backward(out.loss);
  // The backward hook received d loss / d (norm2's output), exactly what the tape holds for it.
  REQUIRE(grad_seen.size() == static_cast<size_t>(2 * 3 * 8));
  const TensorView<double> g = tape.grad(norm_out);
  for (size_t i = 0; i < grad_seen.size(); ++i) CHECK(grad_seen[i] == g[static_cast<int64_t>(i)]);
  CHECK(std::any_of(grad_seen.begin(), grad_seen.end(), [](double v) { return v != 0; }));
  // Hooks change nothing the model computes: the loss and every gradient equal a hook-free twin's.
  Decoder<double> twin(tiny(), 4);
  Tape<double> t2;
  const auto o2 = twin.forward(t2, ids, 2, 3, targets);
  t2.backward(o2.loss);
  CHECK(o2.loss.value()[0] == out.loss.value()[0]);
  const auto a = model.parameters(), b = twin.parameters();
  for (size_t i = 0; i < a.size(); ++i)
    CHECK_THAT(a[i]->grad().view(), AllClose<double>(testing::to_vector<double>(b[i]->grad().view()), 0, 0));
  // Removed, a hook runs no more; an id that is not the module's is refused.
  block.remove_hook(fwd);
  Tape<double> t3;
  model.forward(t3, ids, 2, 3, targets);
  CHECK(block_out_rms.size() == 1);
  CHECK(norm_calls == 2);
  REQUIRE_THROWS_WITH(block.remove_hook(fwd), "remove_hook: DecoderBlock has no hook " + std::to_string(fwd));
}

TEST_CASE("module: named_modules walks the tree by dotted path, and a hook may remove itself", "[nn][hooks]") {
  Decoder<double> model(tiny(), 4);
  const auto mods = model.named_modules();
  REQUIRE(mods.size() > 3);
  CHECK(mods[0].first.empty());
  CHECK(mods[0].second == &model);
  std::vector<std::string> names;
  for (const auto& [name, m] : mods) names.push_back(name);
  const auto at = [&](const std::string& n) { return std::find(names.begin(), names.end(), n); };
  REQUIRE(at("blocks.1") != names.end());
  CHECK(mods[static_cast<size_t>(at("blocks.1") - names.begin())].second == &model.block(1));
  CHECK(at("blocks.1.norm2") != names.end());
  CHECK(at("blocks.1") < at("blocks.1.norm2"));  // depth-first: a parent before its children
  // A hook that removes itself (and adds another) while the hooks run: the pass goes on with the
  // list as it was, and the next pass sees the change.
  DecoderBlock<double>& block = model.block(0);
  int first = 0, second = 0;
  int64_t id = 0;
  id = block.register_forward_hook([&](UnaryModule<double>& m, Var<double>, Var<double>) {
    ++first;
    m.remove_hook(id);
    m.register_forward_hook([&](UnaryModule<double>&, Var<double>, Var<double>) { ++second; });
  });
  const std::vector<int32_t> ids{1, 2, 3, 4, 5, 6};
  Tape<double> t1, t2;
  model.forward(t1, ids, 2, 3);
  CHECK((first == 1 && second == 0));
  model.forward(t2, ids, 2, 3);
  CHECK((first == 1 && second == 1));
}
