#include <array>
#include <limits>

#include "nn_support.h"
#include "tapegrad/nn/attention.h"
#include "tapegrad/ops.h"
#include "tapegrad/threads.h"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::testing;

namespace {

// The same attention composed from primitive ops, with q, k, v weights as separate tensors, and
// QK-norm (if any) as the attention's own q_norm / k_norm modules (each norm's tape node) applied
// to the (B, NH, T, HS) heads — for every norm the registry can use as a QK-norm.
struct Reference {
  Parameter<double> wq, wk, wv, bq, bk, bv, wp, bp;
  UnaryModule<double>* q_norm = nullptr;
  UnaryModule<double>* k_norm = nullptr;
  struct Part {
    Parameter<double>& w;
    Parameter<double>& b;
  };
  std::array<Part, 3> qkv_parts() { return {Part{wq, bq}, Part{wk, bk}, Part{wv, bv}}; }
  Tensor<double> mask;  // (T, T): 0 on and below the diagonal, -1e30 above
  Reference(CausalSelfAttention<double>& a, int64_t Tn) : q_norm(a.q_norm()), k_norm(a.k_norm()) {
    const int64_t C = a.options().dim;
    const auto& w = a.qkv().weight().value();
    const auto& b = a.qkv().bias()->value();
    wq = {"wq", rows_of(w, 0, C)}, wk = {"wk", rows_of(w, C, C)}, wv = {"wv", rows_of(w, 2 * C, C)};
    bq = {"bq", rows_of(b, 0, C)}, bk = {"bk", rows_of(b, C, C)}, bv = {"bv", rows_of(b, 2 * C, C)};
    wp = {"wp", a.proj().weight().value()}, bp = {"bp", a.proj().bias()->value()};
    mask = Tensor<double>(Shape{Tn, Tn});
    for (int64_t i = 0; i < Tn; ++i)
      for (int64_t j = i + 1; j < Tn; ++j) mask.at(i, j) = -1e30;
  }
  Var<double> forward(Tape<double>& tape, Var<double> x, int64_t NH, Var<double>* logits = nullptr) {
    const Shape s = x.shape();
    const int64_t B = s[0], Tn = s[1], C = s[2], HS = C / NH;
    auto proj = [&](Parameter<double>& w, Parameter<double>& b) {
      return add(matmul(x, tape.param(w), Trans::kNo, Trans::kYes), tape.param(b));
    };
    auto heads = [&](Var<double> t) { return transpose(reshape(t, {B, Tn, NH, HS}), 1, 2); };
    Var<double> q = heads(proj(wq, bq)), k = heads(proj(wk, bk)), v = heads(proj(wv, bv));
    if (q_norm) q = q_norm->forward(q), k = k_norm->forward(k);
    Var<double> S = scale(matmul(q, k, Trans::kNo, Trans::kYes), 1.0 / std::sqrt(static_cast<double>(HS)));
    if (logits) *logits = S;
    Var<double> y = matmul(softmax(add(S, tape.constant(mask))), v);
    y = reshape(transpose(y, 1, 2), {B, Tn, C});
    return add(matmul(y, tape.param(wp), Trans::kNo, Trans::kYes), tape.param(bp));
  }
};

}  // namespace

TEST_CASE("attention: the fused node equals the composition of primitive ops, value and gradient", "[nn]") {
  // QK-norm composed as the norm modules' own tape nodes applied to the heads.
  const NormKind qk_norm = GENERATE(from_range(qk_norms(true)));
  INFO("qk-norm " << to_string(qk_norm));
  // The last size is large enough for the batch-split region (each thread its own sequences'
  // projections and heads) to run on two threads; B = 3 on two threads takes the staged path.
  const auto [B, Tn, C, NH] = GENERATE(std::tuple{2, 5, 6, 3}, std::tuple{1, 1, 4, 2}, std::tuple{3, 7, 8, 1},
                                       std::tuple{4, 16, 32, 4});
  const int threads = GENERATE(1, 2);
  INFO("B" << B << " T" << Tn << " C" << C << " NH" << NH << ", " << threads << " threads");
  set_num_threads(threads);
  CausalSelfAttention<double> attn({.dim = C, .heads = NH, .qk_norm = qk_norm});
  randomize(attn, 1);
  Reference ref(attn, Tn);
  Parameter<double> x("x", randn({B, Tn, C}, 2)), x_ref("x", x.value());
  const Tensor<double> dy = randn({B, Tn, C}, 3);

  Tape<double> t1, t2;
  Var<double> fused = attn.forward(t1.param(x));
  // The reference runs the same q/k norm modules: their gradients collect the reference's, after
  // the fused node's have been taken out.
  std::vector<Tensor<double>> fused_norm_grads;
  Var<double> composed = ref.forward(t2, t2.param(x_ref), NH);
  REQUIRE_THAT(fused.value(), AllClose<double>(to_vector<double>(composed.value()), 1e-13, 1e-12));
  t1.backward(fused, dy.view());
  if (attn.q_norm())
    for (Module<double>* m : {static_cast<Module<double>*>(attn.q_norm()), static_cast<Module<double>*>(attn.k_norm())})
      for (Parameter<double>* p : m->parameters()) fused_norm_grads.push_back(p->grad()), p->grad().fill(0);
  t2.backward(composed, dy.view());
  set_num_threads(0);
  CHECK_THAT(x.grad().view(), AllClose<double>(to_vector<double>(x_ref.grad().view()), 1e-12, 1e-11));
  const auto& dw = attn.qkv().weight().grad();
  const auto& db = attn.qkv().bias()->grad();
  int64_t part = 0;
  for (const Reference::Part& p : ref.qkv_parts()) {
    CHECK_THAT(TensorView<const double>(dw.data() + part * C * C, {C, C}), AllClose<double>(to_vector<double>(p.w.grad().view()), 1e-12, 1e-11));
    CHECK_THAT(TensorView<const double>(db.data() + part * C, {C}), AllClose<double>(to_vector<double>(p.b.grad().view()), 1e-12, 1e-11));
    ++part;
  }
  CHECK_THAT(attn.proj().weight().grad().view(), AllClose<double>(to_vector<double>(ref.wp.grad().view()), 1e-12, 1e-11));
  CHECK_THAT(attn.proj().bias()->grad().view(), AllClose<double>(to_vector<double>(ref.bp.grad().view()), 1e-12, 1e-11));
  if (attn.q_norm()) {
    size_t i = 0;
    for (Module<double>* m : {static_cast<Module<double>*>(attn.q_norm()), static_cast<Module<double>*>(attn.k_norm())})
      for (Parameter<double>* p : m->parameters())
        CHECK_THAT(fused_norm_grads[i++].view(), AllClose<double>(to_vector<double>(p->grad().view()), 1e-12, 1e-11));
    CHECK(i > 0);
  }
}

TEST_CASE("attention: causal — an output never depends on later positions", "[nn]") {
  CausalSelfAttention<double> attn({.dim = 8, .heads = 2});
  randomize(attn, 4);
  Tensor<double> x = randn({1, 6, 8}, 5);
  Tape<double> tape;
  const Tensor<double> before = Tensor<double>::copy_of(attn.forward(tape.constant(x)).value());
  for (int64_t c = 0; c < 8; ++c) x.at(0, 5, c) += 10.0;  // change only the last position
  Var<double> after = attn.forward(tape.constant(x));
  for (int64_t i = 0; i < 5 * 8; ++i) CHECK(after.value()[i] == before[i]);
  CHECK(after.value()[5 * 8] != before[5 * 8]);
}

TEST_CASE("attention: the reported max logit is the largest visible <q,k>/sqrt(HS)", "[nn]") {
  CausalSelfAttention<double> attn({.dim = 6, .heads = 3});
  randomize(attn, 6);
  Reference ref(attn, 4);
  Tape<double> tape;
  const Tensor<double> x = randn({2, 4, 6}, 7);
  attn.forward(tape.constant(x));
  Var<double> logits;
  ref.forward(tape, tape.constant(x), 3, &logits);
  double expect = -std::numeric_limits<double>::infinity();
  for (int64_t bh = 0; bh < 6; ++bh)
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j <= i; ++j) expect = std::max(expect, logits.value()[(bh * 4 + i) * 4 + j]);
  CHECK_THAT(attn.last_max_logit(), Catch::Matchers::WithinRel(expect, 1e-12));
}

TEST_CASE("gradcheck: attention", "[nn][gradcheck]") {
  const bool bias = GENERATE(true, false);
  const auto [B, Tn, C, NH] =
      GENERATE(std::tuple{1, 1, 3, 1}, std::tuple{2, 4, 6, 2}, std::tuple{1, 5, 9, 3}, std::tuple{2, 3, 4, 4});
  CausalSelfAttention<double> attn({.dim = C, .heads = NH, .bias = bias});
  randomize(attn, 1);
  Parameter<double> x("x", randn({B, Tn, C}, 2));
  require_gradcheck(gradcheck_module("attention", attn, x, [&](Var<double> v) { return attn.forward(v); }));
}

TEST_CASE("attention: float32 agrees with float64", "[nn][precision]") {
  require_precisions_agree(
      [](auto&, auto in) { return causal_self_attention(in[0], in[1], in[2], in[3], in[4], 4); },
      {randn({2, 16, 32}, 1), randn({96, 32}, 2, 0.2), randn({32, 32}, 3, 0.2), randn({96}, 4), randn({32}, 5)}, 1e-5);
}

TEST_CASE("attention: heads must divide C", "[nn][errors]") {
  REQUIRE_THROWS_WITH(CausalSelfAttention<float>({.dim = 10, .heads = 4}),
                      "CausalSelfAttention: heads = 4 does not divide dim = 10");
}

TEST_CASE("gradcheck: attention qk-norm", "[nn][gradcheck]") {
  const NormKind kind = GENERATE(from_range(qk_norms(false)));
  INFO("qk-norm " << to_string(kind));
  const bool bias = GENERATE(true, false);
  // Not T = 1: one visible position makes the output independent of q and k, so the norms'
  // gradients are exactly zero and a relative error means nothing. Not HS = 2 either: a
  // LayerNorm over two values outputs +-1 whatever they are, so its input gradient is ~eps.
  const auto [B, Tn, C, NH] = GENERATE(std::tuple{2, 3, 8, 2}, std::tuple{2, 4, 6, 2}, std::tuple{1, 5, 9, 3});
  CausalSelfAttention<double> attn({.dim = C, .heads = NH, .bias = bias, .qk_norm = kind});
  randomize(attn, 1);
  Parameter<double> x("x", randn({B, Tn, C}, 2));
  const GradcheckResult r = gradcheck_module("attention qk-norm", attn, x, [&](Var<double> v) { return attn.forward(v); });
  // x, qkv and proj weights (and biases), then q_norm and k_norm's weights.
  CHECK(r.inputs.size() == 3 + (bias ? 2 : 0) + 2 * attn.q_norm()->parameters().size());
  require_gradcheck(r);
}

TEST_CASE("attention: QK-norm holds the logits to sqrt(HS) at any input scale", "[nn]") {
  // RMS-normalised q and k with unit weights have |q| = |k| = sqrt(HS), so by Cauchy-Schwarz
  // |<q,k>| / sqrt(HS) <= sqrt(HS). Without biases, q and k are linear in x: the plain logits grow
  // exactly with the square of x's scale, the normalised ones not at all (up to eps).
  CausalSelfAttention<double> plain({.dim = 16, .heads = 2, .bias = false});
  CausalSelfAttention<double> normed({.dim = 16, .heads = 2, .bias = false, .qk_norm = NormKind::parse("rmsnorm")});
  randomize(plain, 21, 0.2);
  for (auto& [name, p] : plain.named_parameters()) normed.parameter(name).value() = Tensor<double>::copy_of(p->value().view());
  const Tensor<double> x = randn({2, 6, 16}, 22);
  Tape<double> tape;
  plain.forward(tape.constant(x));
  normed.forward(tape.constant(x));
  const double plain1 = plain.last_max_logit(), normed1 = normed.last_max_logit();
  Tensor<double> big = Tensor<double>::copy_of(x.view());
  for (int64_t i = 0; i < big.numel(); ++i) big[i] *= 1000.0;
  plain.forward(tape.constant(big));
  normed.forward(tape.constant(big));
  CHECK(normed1 <= std::sqrt(8.0));
  CHECK_THAT(normed.last_max_logit(), Catch::Matchers::WithinRel(normed1, 1e-4));
  CHECK_THAT(plain.last_max_logit(), Catch::Matchers::WithinRel(1e6 * plain1, 1e-9));
}

TEST_CASE("attention: QK-norm parameters are named and shaped per head", "[nn]") {
  CausalSelfAttention<float> attn({.dim = 12, .heads = 3, .qk_norm = NormKind::parse("layernorm")});
  std::vector<std::string> names;
  for (auto& [name, p] : attn.named_parameters()) names.push_back(cat(name, p->shape()));
  CHECK(names == std::vector<std::string>{"qkv.weight(36,12)", "qkv.bias(36)", "proj.weight(12,12)", "proj.bias(12)",
                                          "q_norm.weight(4)", "k_norm.weight(4)"});
  CHECK_THAT(attn.summary(), Catch::Matchers::Contains("qk_norm=layernorm"));
}

TEST_CASE("attention: QK-norm float32 agrees with float64", "[nn][precision]") {
  const auto unit_weights = [](int64_t n, uint64_t seed) {  // 1 + N(0, 0.2^2), like trained norm weights
    Tensor<double> w = randn({n}, seed, 0.2);
    for (int64_t i = 0; i < n; ++i) w[i] += 1.0;
    return w;
  };
  require_precisions_agree(
      [](auto&, auto in) {
        using T = std::remove_pointer_t<decltype(in[0].data())>;
        QKNormInputs<T> qk;
        qk.kernels = NormKind::parse("rmsnorm").entry().row_kernels<T>(), qk.q_weight = in[5], qk.k_weight = in[6];
        return causal_self_attention(in[0], in[1], in[2], in[3], in[4], 4, static_cast<T*>(nullptr), qk);
      },
      {randn({2, 16, 32}, 1), randn({96, 32}, 2, 0.2), randn({32, 32}, 3, 0.2), randn({96}, 4), randn({32}, 5),
       unit_weights(8, 6), unit_weights(8, 7)},
      1e-5);
}

TEST_CASE("attention: QK-norm weights of the wrong shape are a clear error", "[nn][errors]") {
  Tape<double> tape;
  QKNormInputs<double> qk;
  qk.kernels = NormKind::parse("rmsnorm").entry().row_kernels<double>();
  qk.q_weight = tape.constant(randn({3}, 1)), qk.k_weight = tape.constant(randn({3}, 2));
  REQUIRE_THROWS_WITH(causal_self_attention(tape.constant(randn({1, 2, 8}, 3)), tape.constant(randn({24, 8}, 4)),
                                            tape.constant(randn({8, 8}, 5)), Var<double>{}, Var<double>{}, 2,
                                            static_cast<double*>(nullptr), qk),
                      "causal_self_attention: QK-norm needs q and k weights of shape (4) for heads of 4 = C / heads, "
                      "got (3) and (3)");
}
