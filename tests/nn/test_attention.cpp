#include <limits>

#include "nn_support.h"
#include "tapegrad/nn/attention.h"
#include "tapegrad/ops.h"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::testing;

namespace {

// The same attention composed from primitive ops, with q, k, v weights as separate tensors.
struct Reference {
  Parameter<double> wq, wk, wv, bq, bk, bv, wp, bp;
  Tensor<double> mask;  // (T, T): 0 on and below the diagonal, -1e30 above
  Reference(CausalSelfAttention<double>& a, int64_t Tn) {
    const int64_t C = a.options().dim;
    const auto& w = a.qkv().weight().value;
    const auto& b = a.qkv().bias()->value;
    wq = {"wq", rows_of(w, 0, C)}, wk = {"wk", rows_of(w, C, C)}, wv = {"wv", rows_of(w, 2 * C, C)};
    bq = {"bq", rows_of(b, 0, C)}, bk = {"bk", rows_of(b, C, C)}, bv = {"bv", rows_of(b, 2 * C, C)};
    wp = {"wp", a.proj().weight().value}, bp = {"bp", a.proj().bias()->value};
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
    Var<double> S = scale(matmul(q, k, Trans::kNo, Trans::kYes), 1.0 / std::sqrt(static_cast<double>(HS)));
    if (logits) *logits = S;
    Var<double> y = matmul(softmax(add(S, tape.constant(mask))), v);
    y = reshape(transpose(y, 1, 2), {B, Tn, C});
    return add(matmul(y, tape.param(wp), Trans::kNo, Trans::kYes), tape.param(bp));
  }
};

}  // namespace

TEST_CASE("attention: the fused node equals the composition of primitive ops, value and gradient", "[nn]") {
  const auto [B, Tn, C, NH] = GENERATE(std::tuple{2, 5, 6, 3}, std::tuple{1, 1, 4, 2}, std::tuple{3, 7, 8, 1});
  CausalSelfAttention<double> attn({.dim = C, .n_head = NH});
  randomize(attn, 1);
  Reference ref(attn, Tn);
  Parameter<double> x("x", randn({B, Tn, C}, 2)), x_ref("x", x.value);
  const Tensor<double> dy = randn({B, Tn, C}, 3);

  Tape<double> t1, t2;
  Var<double> fused = attn.forward(t1.param(x));
  Var<double> composed = ref.forward(t2, t2.param(x_ref), NH);
  REQUIRE_THAT(fused.value(), AllClose<double>(to_vector<double>(composed.value()), 1e-13, 1e-12));
  t1.backward(fused, dy.view());
  t2.backward(composed, dy.view());
  CHECK_THAT(x.grad.view(), AllClose<double>(to_vector<double>(x_ref.grad.view()), 1e-12, 1e-11));
  const auto& dw = attn.qkv().weight().grad;
  CHECK_THAT(TensorView<const double>(dw.data() + C * C, {C, C}), AllClose<double>(to_vector<double>(ref.wk.grad.view()), 1e-12, 1e-11));
  CHECK_THAT(attn.proj().weight().grad.view(), AllClose<double>(to_vector<double>(ref.wp.grad.view()), 1e-12, 1e-11));
}

TEST_CASE("attention: causal — an output never depends on later positions", "[nn]") {
  CausalSelfAttention<double> attn({.dim = 8, .n_head = 2});
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
  CausalSelfAttention<double> attn({.dim = 6, .n_head = 3});
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
  CausalSelfAttention<double> attn({.dim = C, .n_head = NH, .bias = bias});
  randomize(attn, 1);
  Parameter<double> x("x", randn({B, Tn, C}, 2));
  require_gradcheck(gradcheck_module("attention", attn, x, [&](Var<double> v) { return attn.forward(v); }));
}

TEST_CASE("attention: float32 agrees with float64", "[nn][precision]") {
  require_precisions_agree(
      [](auto&, auto in) { return causal_self_attention(in[0], in[1], in[2], in[3], in[4], 4); },
      {randn({2, 16, 32}, 1), randn({96, 32}, 2, 0.2), randn({32, 32}, 3, 0.2), randn({96}, 4), randn({32}, 5)}, 1e-5);
}

TEST_CASE("attention: n_head must divide C", "[nn][errors]") {
  REQUIRE_THROWS_WITH(CausalSelfAttention<float>({.dim = 10, .n_head = 4}),
                      "CausalSelfAttention: n_head = 4 does not divide dim = 10");
}
