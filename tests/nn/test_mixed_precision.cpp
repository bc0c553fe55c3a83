// Mixed precision in the modules: the norms computed as a bf16 implementation would, the
// boundary op's gradient, and a decoder forward under its precision setting.
#include <algorithm>

#include "nn_support.h"
#include "tapegrad/bf16.h"
#include "tapegrad/gemm_bf16.h"
#include "tapegrad/nn/attention.h"
#include "tapegrad/nn/decoder.h"
#include "tapegrad/nn/layernorm.h"
#include "tapegrad/nn/norm.h"
#include "tapegrad/nn/linear.h"
#include "tapegrad/nn/mlp.h"
#include "tapegrad/ops.h"
#include "tapegrad/ops/to_bf16.h"
#include "tapegrad/precision.h"
#include "tapegrad/threads.h"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::testing;

namespace {
bool is_bf16(float v) { return round_bf16(v) == v; }

// Every bf16 GEMM path this machine runs; restores the process's path and threads after.
struct Bf16Paths {
  Bf16Kernels kernels = bf16_kernels();
  int threads = num_threads();
  std::vector<Bf16Kernels> runnable() const {
    std::vector<Bf16Kernels> k{Bf16Kernels::kEmulated};
    if (bf16_avx512_available()) k.push_back(Bf16Kernels::kAvx512Bf16);
    if (bf16_amx_available()) k.push_back(Bf16Kernels::kAmx);
    return k;
  }
  ~Bf16Paths() {
    set_bf16_kernels(kernels);
    set_num_threads(threads);
    set_bf16_round_ahead(true);
  }
};

// The identity whose gradient crosses as bf16: y = x, dx += round_bf16(dy). What a bf16 Linear's
// output is to the gradient arriving there (torch.autocast: the output is a bf16 tensor).
Var<float> gradient_in_bf16(Var<float> x) {
  Tape<float>& tape = x.tape();
  Var<float> y = tape.make_output("gradient_in_bf16", x.shape(), {x});
  const int64_t n = x.shape().numel();
  std::copy_n(x.data(), n, y.data());
  tape.record("gradient_in_bf16", {x}, y, [n](const float* dy, float* const* dx) {
    for (int64_t i = 0; i < n; ++i) dx[0][i] += round_bf16(dy[i]);
  });
  return y;
}

// x W^T + b from the primitive ops (matmul, add), at the precision the caller's Autocast sets:
// matmul rounds both operands of each of its GEMMs, and under bf16 the gradient reaching the sum
// is rounded first, so add's bias gradient sums the bf16 dy as a bf16 Linear's does.
Var<float> composed_linear(Tape<float>& tape, Var<float> x, Parameter<float>& w, Parameter<float>& b) {
  const Var<float> y = add(matmul(x, tape.param(w), Trans::kNo, Trans::kYes), tape.param(b));
  return autocast_state().gemm == Precision::kBf16 ? gradient_in_bf16(y) : y;
}

// The largest |a - b| over the largest |b|. Against a composition of primitive ops the float32
// values a GEMM rounds differ in their last bits (other kernels, other sum orders), and a value at
// a bf16 rounding boundary then goes to the neighbouring bf16 (2^-8 of it): the two agree to a
// small fraction of bf16's precision (seen: up to 1.6e-4 with the sanitizers' kernels), while a
// GEMM operand not rounded at all, or rounded twice as far, is off by ~2^-9 everywhere. The exact
// check of the round-ahead path is the bitwise one below.
double relative_gap(TensorView<const float> a, TensorView<const float> b) {
  double gap = 0, scale = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    gap = std::max(gap, std::abs(static_cast<double>(a.data()[i]) - b.data()[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b.data()[i])));
  }
  return gap / scale;
}
constexpr double kSumOrder = 5e-4;
}  // namespace

TEST_CASE("to_bf16: rounds the value and the gradient crossing it, and double tapes pass through", "[nn][bf16]") {
  Tape<float> tape;
  auto x = Tensor<float>::from({1.0f + 0x1p-8f, 1.0f + 0x1p-7f + 0x1p-8f, -3.14159f}, {3});
  Tensor<float> dx(Shape{3});
  Var<float> xv = tape.leaf(x.view(), dx.view());
  Var<float> y = to_bf16(xv);
  CHECK(y.value()[0] == 1.0f);                // tie to even
  CHECK(y.value()[1] == 1.0f + 0x1p-6f);      // tie to even, upward
  CHECK(y.value()[2] == round_bf16(-3.14159f));
  const auto up = Tensor<float>::from({0.1f, 1.0f + 0x1p-8f, -7.77f}, {3});
  tape.backward(y, up);
  for (int i = 0; i < 3; ++i) CHECK(dx[i] == round_bf16(up[i]));
  Tape<double> t64;
  Var<double> d = t64.constant(Tensor<double>::from({1.0 + 0x1p-8}, {1}));
  CHECK(to_bf16(d).value()[0] == 1.0 + 0x1p-8);
}

TEST_CASE("apply_norm: under Autocast the norm reads and writes bf16 values, float32 otherwise", "[nn][bf16]") {
  LayerNorm<float> ln({.dim = 64});
  Rng rng(3);
  Tensor<float> x(Shape{4, 64});
  // A large mean over a small spread: where rounding the input costs a bf16 LayerNorm most.
  for (int64_t i = 0; i < x.numel(); ++i) x[i] = 40.0f + static_cast<float>(rng.normal());
  Tape<float> tape;
  const Var<float> exact = apply_norm<float>(ln, tape.constant(x));
  Var<float> mixed;
  {
    const Autocast bf16({.gemm = Precision::kFp32, .norms = Precision::kBf16});
    mixed = apply_norm<float>(ln, tape.constant(x));
  }
  CHECK(autocast_state() == ComputePrecision{});  // restored
  double worst = 0, exact_not_bf16 = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    CHECK(is_bf16(mixed.value()[i]));
    exact_not_bf16 += !is_bf16(exact.value()[i]);
    worst = std::max(worst, std::abs(static_cast<double>(mixed.value()[i]) - exact.value()[i]));
  }
  CHECK(exact_not_bf16 > 200);
  // No norm ("none", the identity): nothing computed, nothing rounded.
  const auto none = make_norm<float>(NormKind::none(), {.dim = 64});
  {
    const Autocast bf16({.gemm = Precision::kBf16, .norms = Precision::kBf16});
    const Var<float> y = apply_norm<float>(*none, tape.constant(x));
    for (int64_t i = 0; i < x.numel(); ++i) CHECK(y.value()[i] == x[i]);
  }  // the float32 norm's outputs are not bf16 values
  // The input rounded at |x| ~ 40 carries up to 2^-9 * 64 = 0.125 of error in x - mu, against a unit
  // spread: the output moves by up to ~0.13 here (what the lab measures as the norm's drift).
  CHECK(worst > 0.01);
  CHECK(worst < 0.3);
}

TEST_CASE("decoder: precision bf16 changes the loss by bf16 rounding only, and leaves the thread's state", "[nn][bf16]") {
  DecoderConfig c;
  c.layers = 2, c.dim = 64, c.ctx = 32;
  Decoder<float> fp32(c, 42);
  c.precision = Precision::kBf16;
  Decoder<float> bf16(c, 42);  // same seed: same weights
  c.norm_precision = Precision::kBf16;
  Decoder<float> bf16_norms(c, 42);
  const TokenBatch b = random_batch(4 * 32, c.vocab_size, 1);
  Tape<float> tape;
  const float l32 = fp32.forward(tape, b.ids, 4, 32, b.targets).loss.value()[0];
  const float l16 = bf16.forward(tape, b.ids, 4, 32, b.targets).loss.value()[0];
  const float l16n = bf16_norms.forward(tape, b.ids, 4, 32, b.targets).loss.value()[0];
  CHECK(autocast_state() == ComputePrecision{});
  CHECK(l16 != l32);
  CHECK(l16n != l16);
  CHECK_THAT(l16, Catch::Matchers::WithinAbs(l32, 5e-3));
  CHECK_THAT(l16n, Catch::Matchers::WithinAbs(l32, 1e-2));
  CHECK(decoder_config_from_json(to_json(c)) == c);  // the precision settings round-trip
  nlohmann::json j = to_json(c);
  j["precision"] = "fp16";
  CHECK_THROWS_WITH(decoder_config_from_json(j), Catch::Contains("config: precision: unknown precision 'fp16'") && Catch::Contains("fp32, bf16"));
}

// The fused modules round each GEMM operand to bf16 (on the emulated path ahead of the GEMMs: x
// and dy once for two GEMMs each, the activation in place), and their bias gradients sum the
// rounded dy. Their primitive-op compositions round inside every matmul: the two must agree
// (relative_gap) on every kernel path, with and without biases.
TEST_CASE("bf16 modules: Linear, MLP and attention equal their primitive-op compositions under Autocast",
          "[nn][bf16]") {
  const bool bias = GENERATE(true, false);
  const int threads = GENERATE(1, 2);
  Bf16Paths paths;
  set_num_threads(threads);
  const int64_t B = 3, Tn = 24, C = 32, NH = 4, H = 96;
  for (Bf16Kernels k : paths.runnable()) {
    set_bf16_kernels(k);
    INFO("kernels " << bf16_kernels_name() << ", bias " << bias << ", " << threads << " threads");
    Parameter<float> x("x", randn({B, Tn, C}, 2).cast<float>()), x_ref("x", x.value());
    const Tensor<float> dy = randn({B, Tn, C}, 3).cast<float>();
    const ComputePrecision bf16{.gemm = Precision::kBf16};
    const Tensor<float> zero_bias = Tensor<float>(Shape{4 * C});
    const auto bias_of = [&](Parameter<float>* b, int64_t begin, int64_t n) {
      return b != nullptr ? rows_of(b->value(), begin, n) : rows_of(zero_bias, 0, n);
    };
    SECTION("Linear") {
      Linear<float> lin({.in = C, .out = C, .bias = bias});
      randomize(lin, 1);
      Parameter<float> w("w", lin.weight().value()), b("b", bias_of(lin.bias(), 0, C));
      Tape<float> t1, t2;
      Var<float> fused, composed;
      {
        const Autocast a(bf16);
        fused = lin.forward(t1.param(x));
        composed = composed_linear(t2, t2.param(x_ref), w, b);
      }
      CHECK(relative_gap(fused.value(), composed.value()) < kSumOrder);
      t1.backward(fused, dy.view());
      t2.backward(composed, dy.view());
      CHECK(relative_gap(x.grad().view(), x_ref.grad().view()) < kSumOrder);
      CHECK(relative_gap(lin.weight().grad().view(), w.grad().view()) < kSumOrder);
      if (bias) CHECK(relative_gap(lin.bias()->grad().view(), b.grad().view()) < kSumOrder);
    }
    SECTION("MLP (GELU)") {
      MLP<float> m({.dim = C, .hidden = H, .bias = bias});
      randomize(m, 1);
      Parameter<float>* bf = bias ? &m.parameter("fc.bias") : nullptr;
      Parameter<float>* bp = bias ? &m.parameter("proj.bias") : nullptr;
      Parameter<float> w1("w1", m.parameter("fc.weight").value()), b1("b1", bias_of(bf, 0, H));
      Parameter<float> w2("w2", m.parameter("proj.weight").value()), b2("b2", bias_of(bp, 0, C));
      Tape<float> t1, t2;
      Var<float> fused, composed;
      {
        const Autocast a(bf16);
        fused = m.forward(t1.param(x));
        composed = composed_linear(t2, gelu(composed_linear(t2, t2.param(x_ref), w1, b1)), w2, b2);
      }
      CHECK(relative_gap(fused.value(), composed.value()) < kSumOrder);
      t1.backward(fused, dy.view());
      t2.backward(composed, dy.view());
      CHECK(relative_gap(x.grad().view(), x_ref.grad().view()) < kSumOrder);
      CHECK(relative_gap(m.parameter("fc.weight").grad().view(), w1.grad().view()) < kSumOrder);
      CHECK(relative_gap(m.parameter("proj.weight").grad().view(), w2.grad().view()) < kSumOrder);
      if (bias) {
        CHECK(relative_gap(bf->grad().view(), b1.grad().view()) < kSumOrder);
        CHECK(relative_gap(bp->grad().view(), b2.grad().view()) < kSumOrder);
      }
    }
    SECTION("attention") {
      // The projections' GEMMs in bf16, the core (q k^T, softmax, p v) in float32, as the fused node.
      CausalSelfAttention<float> attn({.dim = C, .heads = NH, .bias = bias});
      randomize(attn, 1);
      const Tensor<float>& wqkv = attn.qkv().weight().value();
      Parameter<float> wq("wq", rows_of(wqkv, 0, C)), wk("wk", rows_of(wqkv, C, C)), wv("wv", rows_of(wqkv, 2 * C, C));
      Parameter<float>* bqkv = attn.qkv().bias();
      Parameter<float> bq("bq", bias_of(bqkv, 0, C)), bk("bk", bias_of(bqkv, C, C)), bv("bv", bias_of(bqkv, 2 * C, C));
      Parameter<float> wp("wp", attn.proj().weight().value()), bpp("bp", bias_of(attn.proj().bias(), 0, C));
      Tensor<float> mask(Shape{Tn, Tn});
      for (int64_t i = 0; i < Tn; ++i)
        for (int64_t j = i + 1; j < Tn; ++j) mask.at(i, j) = -1e30f;
      Tape<float> t1, t2;
      Var<float> fused, composed;
      {
        const Autocast a(bf16);
        fused = attn.forward(t1.param(x));
        const Var<float> xin = t2.param(x_ref);
        const auto heads = [&](Var<float> t) { return transpose(reshape(t, {B, Tn, NH, C / NH}), 1, 2); };
        const Var<float> q = heads(composed_linear(t2, xin, wq, bq)), kk = heads(composed_linear(t2, xin, wk, bk)),
                         v = heads(composed_linear(t2, xin, wv, bv));
        Var<float> y;
        {
          const Autocast core({});
          const Var<float> S = scale(matmul(q, kk, Trans::kNo, Trans::kYes), 1.0f / std::sqrt(static_cast<float>(C / NH)));
          y = reshape(transpose(matmul(softmax(add(S, t2.constant(mask))), v), 1, 2), {B, Tn, C});
        }
        composed = composed_linear(t2, y, wp, bpp);
      }
      CHECK(relative_gap(fused.value(), composed.value()) < kSumOrder);
      t1.backward(fused, dy.view());
      t2.backward(composed, dy.view());
      CHECK(relative_gap(x.grad().view(), x_ref.grad().view()) < kSumOrder);
      const Tensor<float>& dw = attn.qkv().weight().grad();
      CHECK(relative_gap(rows_of(dw, 0, C).view(), wq.grad().view()) < kSumOrder);
      CHECK(relative_gap(rows_of(dw, 2 * C, C).view(), wv.grad().view()) < kSumOrder);
      CHECK(relative_gap(attn.proj().weight().grad().view(), wp.grad().view()) < kSumOrder);
      if (bias) {
        CHECK(relative_gap(rows_of(bqkv->grad(), 0, C).view(), bq.grad().view()) < kSumOrder);
        CHECK(relative_gap(attn.proj().bias()->grad().view(), bpp.grad().view()) < kSumOrder);
      }
    }
  }
}

// Rounding ahead (gemm_bf16.h, round_ahead) must change nothing: the emulated path's modules with
// it on and off give the same bits — the output and every gradient — with and without biases, for
// both MLP activations, on one and two threads (the MLP's slabs). With it on, no GEMM rounds an
// operand itself, the weights included (linear.h, rounded_weight).
TEST_CASE("bf16 modules: rounding ahead on the emulated path gives the bits of rounding at every GEMM", "[nn][bf16]") {
  const bool bias = GENERATE(true, false);
  const int threads = GENERATE(1, 2);
  Bf16Paths paths;
  set_bf16_kernels(Bf16Kernels::kEmulated);
  set_num_threads(threads);
  INFO("bias " << bias << ", " << threads << " threads");
  const int64_t B = 3, Tn = 24, C = 32;
  const Tensor<float> x0 = randn({B, Tn, C}, 2).cast<float>(), dy = randn({B, Tn, C}, 3).cast<float>();
  // Every gradient and the output, of one module run forward and backward under Autocast bf16 on a
  // tape of the caller's own (no training step, so no operand cache); `in_gemm` counts the operands
  // a GEMM rounded itself.
  int64_t in_gemm = 0;
  const auto run = [&](UnaryModule<float>& m, bool ahead) {
    set_bf16_round_ahead(ahead);
    for (Parameter<float>* p : m.parameters()) p->grad().fill(0);
    Parameter<float> x("x", x0);
    Tape<float> tape;
    Var<float> y;
    const int64_t before = bf16_operands_rounded_in_gemm();
    {
      const Autocast a({.gemm = Precision::kBf16});
      y = m.forward(tape.param(x));
    }
    tape.backward(y, dy.view());
    in_gemm = bf16_operands_rounded_in_gemm() - before;
    std::vector<std::vector<double>> all{to_vector<float>(y.value()), to_vector<float>(x.grad().view())};
    for (Parameter<float>* p : m.parameters()) all.push_back(to_vector<float>(p->grad().view()));
    set_bf16_round_ahead(true);
    return all;
  };
  Linear<float> lin({.in = C, .out = C, .bias = bias});
  MLP<float> gelu_mlp({.dim = C, .hidden = 96, .bias = bias});
  MLP<float> swiglu_mlp({.dim = C, .hidden = 64, .activation = MlpActivation::kSwiGLU, .bias = bias});
  CausalSelfAttention<float> attn({.dim = C, .heads = 4, .bias = bias});
  for (UnaryModule<float>* m : std::initializer_list<UnaryModule<float>*>{&lin, &gelu_mlp, &swiglu_mlp, &attn}) {
    INFO(m->type_name());
    randomize(*m, 1);
    const auto ahead = run(*m, true);
    // Every operand — activations, gradients and the weights, which forward and backward both
    // read — rounded once, ahead: none by a GEMM.
    CHECK(in_gemm == 0);
    const auto at_each_gemm = run(*m, false);
    CHECK(in_gemm > 0);
    REQUIRE(ahead.size() == at_each_gemm.size());
    for (size_t i = 0; i < ahead.size(); ++i) CHECK(ahead[i] == at_each_gemm[i]);
  }
  const auto plain = run(lin, true);
  set_bf16_kernels(Bf16Kernels::kEmulated);
  {
    // And the switch is seen: rounding ahead happens only where it is on.
    set_bf16_round_ahead(false);
    CHECK_FALSE(bf16_rounds_separately());
    set_bf16_round_ahead(true);
    CHECK(bf16_rounds_separately());
  }
  CHECK(plain.size() == (bias ? 4u : 3u));  // y, dx, dW (and db)
}

// The generic matmul on the emulated path rounds an operand two of its GEMMs read once, ahead:
// the same bits as rounding at every GEMM (the output and both gradients), for every layout the op
// takes — B shared and stacked into rows, both batched, A or B shared across a batch, transposed
// either side — and, when both operands want gradients, no GEMM of its forward or backward rounds
// an operand itself. With one operand constant, only what two GEMMs read is rounded ahead.
TEST_CASE("bf16 matmul: rounding ahead gives the bits of rounding at every GEMM, each operand once", "[ops][bf16]") {
  Bf16Paths paths;
  set_bf16_kernels(Bf16Kernels::kEmulated);
  struct Case {
    Shape a, b;
    Trans ta, tb;
  };
  const std::vector<Case> cases{
      {{3, 5, 8}, {8, 6}, Trans::kNo, Trans::kNo},      // B shared: A's batch stacked into rows
      {{3, 5, 8}, {6, 8}, Trans::kNo, Trans::kYes},     // the tied head's x W^T
      {{2, 8, 5}, {2, 8, 6}, Trans::kYes, Trans::kNo},  // both batched, A transposed
      {{5, 8}, {3, 8, 6}, Trans::kNo, Trans::kNo},      // A shared across B's batch
      {{8, 5}, {3, 6, 8}, Trans::kYes, Trans::kYes},    // A shared and transposed, B transposed
      {{3, 5, 8}, {6, 8}, Trans::kNo, Trans::kYes},
  };
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& c = cases[ci];
    const bool b_constant = ci + 1 == cases.size();  // the last case: B a constant
    INFO("case " << ci << ": " << c.a << (c.ta == Trans::kYes ? "^T" : "") << " x " << c.b
                 << (c.tb == Trans::kYes ? "^T" : "") << (b_constant ? ", B constant" : ""));
    const Tensor<float> a0 = randn(c.a, 10 + ci).cast<float>(), b0 = randn(c.b, 20 + ci).cast<float>();
    const auto run = [&](bool ahead, int64_t* rounded_in_gemm) {
      set_bf16_round_ahead(ahead);
      Parameter<float> a("a", a0), b("b", b0);
      Tape<float> tape;
      const int64_t before = bf16_operands_rounded_in_gemm();
      Var<float> y;
      {
        const Autocast bf16({.gemm = Precision::kBf16});
        y = matmul(tape.param(a), b_constant ? tape.constant(b0.view()) : tape.param(b), c.ta, c.tb);
      }
      tape.backward(y, randn(y.shape(), 30 + ci).cast<float>().view());
      *rounded_in_gemm = bf16_operands_rounded_in_gemm() - before;
      set_bf16_round_ahead(true);
      return std::vector<std::vector<double>>{to_vector<float>(y.value()), to_vector<float>(a.grad().view()),
                                              to_vector<float>(b.grad().view())};
    };
    int64_t in_gemm_ahead = 0, in_gemm_each = 0;
    const auto ahead = run(true, &in_gemm_ahead), each = run(false, &in_gemm_each);
    for (size_t i = 0; i < ahead.size(); ++i) CHECK(ahead[i] == each[i]);
    CHECK(in_gemm_each > 0);
    // Both operands want gradients: none rounded in a GEMM. B constant: A, read by the forward
    // only, and dC, read by dA only, are each rounded once by their GEMM (per batch entry).
    if (!b_constant) CHECK(in_gemm_ahead == 0);
    else CHECK(in_gemm_ahead == 2);
  }
}
