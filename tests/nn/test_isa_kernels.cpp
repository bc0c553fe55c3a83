// Every kernel variant this CPU runs (tapegrad/isa.h), called through its own table whatever the
// active one is, against float64. Variants agree to float round-off, not bitwise: with FMA a
// multiply-add rounds once (GCC contracts a * b + c by default), and packet widths differ.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "tapegrad/bf16.h"
#include "tapegrad/isa.h"
#include "tapegrad/nn/attention.h"
#include "tapegrad/nn/attention_head_kernels.h"
#include "tapegrad/nn/causal_softmax.h"
#include "tapegrad/nn/layernorm.h"
#include "tapegrad/nn/mlp.h"
#include "tapegrad/nn/norm_affine.h"
#include "tapegrad/nn/norm_kernels.h"
#include "tapegrad/nn/rmsnorm.h"
#include "tapegrad/ops/cross_entropy.h"
#include "tapegrad/ops/gelu.h"
#include "tapegrad/optim/adamw.h"
#include "tapegrad/random.h"
#include "tapegrad/threads.h"
#include "tapegrad/vector_ops.h"
#include "tapegrad/vector_sums.h"

using namespace tapegrad;
using namespace tapegrad::nn;

namespace {

std::vector<double> normal(int64_t n, uint64_t seed, double sd = 1.0, double mean = 0.0) {
  Rng rng(seed);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = mean + sd * rng.normal();
  return v;
}
std::vector<float> to_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }

// max |a - exact| / max |exact|; the absolute error where exact is all zero (one position's dS)
double relative_error(const std::vector<float>& a, const std::vector<double>& exact) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    err = std::max(err, std::abs(a[i] - exact[i]));
    scale = std::max(scale, std::abs(exact[i]));
  }
  return scale > 0 ? err / scale : err;
}

}  // namespace

TEST_CASE("isa kernels: the norms of every variant agree with float64", "[nn][isa]") {
  const int64_t rows = 37, C = GENERATE(16, 64, 70);
  const auto x = normal(rows * C, 1, 2.0, 0.5), dy = normal(rows * C, 2), g = normal(C, 3, 0.3, 1.0),
             b = normal(C, 4, 0.1);
  const auto xf = to_float(x), dyf = to_float(dy), gf = to_float(g), bf = to_float(b);
  std::vector<double> y64(rows * C), m64(rows), r64(rows), dx64(rows * C, 0.0), dg64(C, 0.0), db64(C, 0.0);
  const LayerNormKernels& ref = layernorm_kernels(Isa::baseline);
  ref.f64.forward(y64.data(), m64.data(), r64.data(), x.data(), g.data(), b.data(), rows, C, 1e-5);
  layernorm_backward_reference(dx64.data(), dg64.data(), db64.data(), dy.data(), x.data(), m64.data(), r64.data(),
                               g.data(), rows, C);
  std::vector<double> ry64(rows * C), rinv64(rows), rdx64(rows * C, 0.0), rdw64(C, 0.0);
  rmsnorm_kernels(Isa::baseline).f64.forward(ry64.data(), rinv64.data(), x.data(), g.data(), rows, C, 1e-5);
  rmsnorm_backward_reference(rdx64.data(), rdw64.data(), dy.data(), x.data(), rinv64.data(), g.data(), rows, C);

  for (Isa isa : runnable_isas()) {
    INFO("variant " << isa_name(isa) << ", C = " << C);
    std::vector<float> y(rows * C), mean(rows), rstd(rows), dx(rows * C, 0.f), dg(C, 0.f), db(C, 0.f),
        scratch(norm_backward_scratch(C));
    const LayerNormFns<float>& ln = layernorm_kernels(isa).f32;
    ln.forward(y.data(), mean.data(), rstd.data(), xf.data(), gf.data(), bf.data(), rows, C, 1e-5f);
    ln.backward(dx.data(), dg.data(), db.data(), dyf.data(), xf.data(), mean.data(), rstd.data(), gf.data(), rows, C,
                scratch.data());
    CHECK(relative_error(y, y64) < 2e-6);
    CHECK(relative_error(dx, dx64) < 2e-5);
    CHECK(relative_error(dg, dg64) < 2e-5);
    CHECK(relative_error(db, db64) < 2e-6);
    std::vector<float> ry(rows * C), rinv(rows), rdx(rows * C, 0.f), rdw(C, 0.f);
    const RmsNormFns<float>& rms = rmsnorm_kernels(isa).f32;
    rms.forward(ry.data(), rinv.data(), xf.data(), gf.data(), rows, C, 1e-5f);
    rms.backward(rdx.data(), rdw.data(), dyf.data(), xf.data(), rinv.data(), gf.data(), rows, C, scratch.data());
    CHECK(relative_error(ry, ry64) < 2e-6);
    CHECK(relative_error(rdx, rdx64) < 2e-5);
    CHECK(relative_error(rdw, rdw64) < 2e-5);
  }
}

TEST_CASE("isa kernels: GELU and SwiGLU of every variant agree with float64", "[nn][isa]") {
  const int64_t rows = 9, H = 300;  // a block of 256 and a partial one
  const auto h = normal(rows * 2 * H, 5, 2.0), da = normal(rows * 2 * H, 6);
  const auto hf = to_float(h), daf = to_float(da);
  std::vector<double> a64(rows * 2 * H), dh64(rows * 2 * H, 0.0), s64(rows * H), ds64(rows * 2 * H, 0.0);
  gelu_kernels(Isa::baseline).f64.forward(a64.data(), h.data(), rows * 2 * H, false);
  gelu_kernels(Isa::baseline).f64.backward(dh64.data(), h.data(), da.data(), rows * 2 * H, false, false);
  swiglu_kernels(Isa::baseline).f64.forward(s64.data(), h.data(), rows, H);
  swiglu_kernels(Isa::baseline).f64.backward(ds64.data(), h.data(), da.data(), rows, H, false);
  for (Isa isa : runnable_isas()) {
    INFO("variant " << isa_name(isa));
    std::vector<float> a(rows * 2 * H), dh(rows * 2 * H, 0.f), s(rows * H), ds(rows * 2 * H, 0.f);
    gelu_kernels(isa).f32.forward(a.data(), hf.data(), rows * 2 * H, false);
    gelu_kernels(isa).f32.backward(dh.data(), hf.data(), daf.data(), rows * 2 * H, false, false);
    // For a bf16 GEMM: each value rounded as it is written, bit for bit round_bf16 of the above,
    // written and added onto what dx held.
    const std::vector<float> held = to_float(normal(rows * 2 * H, 7));
    std::vector<float> a16(a.size()), dh16(dh.size()), dh_added(held), dh16_added(held);
    gelu_kernels(isa).f32.forward(a16.data(), hf.data(), rows * 2 * H, true);
    gelu_kernels(isa).f32.backward(dh16.data(), hf.data(), daf.data(), rows * 2 * H, false, true);
    gelu_kernels(isa).f32.backward(dh_added.data(), hf.data(), daf.data(), rows * 2 * H, true, false);
    gelu_kernels(isa).f32.backward(dh16_added.data(), hf.data(), daf.data(), rows * 2 * H, true, true);
    int64_t a_moved = 0, dh_moved = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      CHECK(a16[i] == round_bf16(a[i]));
      CHECK(dh16[i] == round_bf16(dh[i]));
      CHECK(dh16_added[i] == round_bf16(dh_added[i]));
      a_moved += a16[i] != a[i];
      dh_moved += dh16_added[i] != dh_added[i];
    }
    CHECK(dh_moved > static_cast<int64_t>(a.size()) / 2);
    CHECK(a_moved > static_cast<int64_t>(a.size()) / 2);
    swiglu_kernels(isa).f32.forward(s.data(), hf.data(), rows, H);
    swiglu_kernels(isa).f32.backward(ds.data(), hf.data(), daf.data(), rows, H, false);
    CHECK(relative_error(a, a64) < 1e-6);
    CHECK(relative_error(dh, dh64) < 2e-6);
    CHECK(relative_error(s, s64) < 1e-6);
    CHECK(relative_error(ds, ds64) < 2e-6);
  }
}

TEST_CASE("isa kernels: the cross-entropy's logsumexp and gradient of every variant agree with float64", "[nn][isa]") {
  const int64_t N = 37, V = GENERATE(1, 7, 65, 4097);  // 4097: the scalar path past the stack buffer
  const auto z = normal(N * V, 11, 4.0), dz0 = normal(N * V, 12);
  std::vector<int32_t> t(N);
  for (int64_t i = 0; i < N; ++i) t[static_cast<size_t>(i)] = static_cast<int32_t>((i * 31) % V);
  std::vector<double> lse64(N), dz64 = dz0;
  cross_entropy_kernels(Isa::baseline).f64.logsumexp_rows(lse64.data(), z.data(), N, V);
  cross_entropy_kernels(Isa::baseline).f64.backward(dz64.data(), z.data(), lse64.data(), t.data(), N, V, 0.3, 1e-2);
  for (int64_t i = 0; i < N; ++i) {  // the definition, in long double
    long double total = 0;
    for (int64_t j = 0; j < V; ++j) total += std::exp(static_cast<long double>(z[i * V + j]));
    CHECK(std::abs(lse64[i] - static_cast<double>(std::log(total))) < 1e-12 * std::max(1.0, std::abs(lse64[i])));
  }
  const auto zf = to_float(z);
  for (Isa isa : runnable_isas()) {
    INFO("variant " << isa_name(isa) << ", V = " << V);
    std::vector<float> lse(N), dz = to_float(dz0);
    cross_entropy_kernels(isa).f32.logsumexp_rows(lse.data(), zf.data(), N, V);
    cross_entropy_kernels(isa).f32.backward(dz.data(), zf.data(), lse.data(), t.data(), N, V, 0.3f, 1e-2f);
    CHECK(relative_error(lse, lse64) < 1e-6);
    CHECK(relative_error(dz, dz64) < 2e-6);
  }
}

TEST_CASE("isa kernels: the causal softmax and the head products of every variant agree with float64", "[nn][isa]") {
  const int64_t T = GENERATE(1, 17, 64, 70), HS = GENERATE(16, 48, 64);
  const AttentionDims d{1, T, HS, 1};
  const auto qkv = normal(T * 3 * HS, 7), dy = normal(T * HS, 8);
  std::vector<double> P64(T * T), y64(T * HS), dqkv64(T * 3 * HS, 0.0), scratch64(T * T);
  attention_core_forward_reference(P64.data(), y64.data(), qkv.data(), d);
  attention_core_backward_reference(dqkv64.data(), scratch64.data(), dy.data(), qkv.data(), P64.data(), d);
  const auto S = normal(T * T, 9, 3.0), G = normal(T * T, 10);
  std::vector<double> sm64 = S, g64 = G;
  causal_softmax_forward_reference(sm64.data(), T, T, 1);
  causal_softmax_backward_reference(g64.data(), sm64.data(), T, T, 1);
  const auto qkvf = to_float(qkv), dyf = to_float(dy);
  for (Isa isa : runnable_isas()) {
    INFO("variant " << isa_name(isa) << ", T = " << T << ", HS = " << HS);
    std::vector<float> sm = to_float(S), g = to_float(G);
    causal_softmax_kernels(isa).forward(sm.data(), T, T, 1);
    causal_softmax_kernels(isa).backward(g.data(), sm.data(), T, T, 1);
    CHECK(relative_error(sm, sm64) < 1e-6);
    CHECK(relative_error(g, g64) < 1e-5);
    const HeadKernels& k = head_kernels(isa);
    // The baseline's SSE registers are too narrow for these kernels (its step takes the GEMM path).
    CHECK(k.supports(HS) == (isa != Isa::baseline));
    if (!k.supports(HS)) continue;
    std::vector<float> P(T * T), y(T * HS), dqkv(T * 3 * HS, 0.f),
        scratch(std::max(k.forward_scratch(T, HS), k.backward_scratch(T, HS)));
    const float s = 1.f / std::sqrt(static_cast<float>(HS));
    const float* q = qkvf.data();
    k.forward(P.data(), y.data(), HS, q, q + HS, q + 2 * HS, 3 * HS, T, HS, s, scratch.data());
    k.backward(dqkv.data(), dqkv.data() + HS, dqkv.data() + 2 * HS, dyf.data(), HS, q, q + HS, q + 2 * HS, 3 * HS,
               P.data(), T, HS, s, scratch.data());
    CHECK(relative_error(P, P64) < 1e-6);
    CHECK(relative_error(y, y64) < 1e-6);
    CHECK(relative_error(dqkv, dqkv64) < 1e-5);
  }
}

TEST_CASE("isa kernels: the vector sums of every variant agree with float64", "[nn][isa]") {
  const int64_t n = GENERATE(1, 15, 257, 100003);  // below one lane block, a ragged tail, a parameter's size
  const auto a = to_float(normal(n, 21, 2.0, 0.5)), b = to_float(normal(n, 22));
  long double sq = 0, diff = 0, sum = 0;
  double mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i) {
    sq += static_cast<long double>(a[i]) * a[i];
    diff += (static_cast<long double>(a[i]) - b[i]) * (static_cast<long double>(a[i]) - b[i]);
    sum += a[i];
    mx = std::max(mx, static_cast<double>(a[i]));
  }
  for (Isa isa : runnable_isas()) {
    INFO("variant " << isa_name(isa) << ", n = " << n);
    const VectorSumFns& k = vector_sums(isa);
    CHECK(std::abs(k.sum_squares(a.data(), n) - static_cast<double>(sq)) < 1e-13 * static_cast<double>(sq));
    CHECK(std::abs(k.sum_squared_diff(a.data(), b.data(), n) - static_cast<double>(diff)) < 1e-13 * static_cast<double>(diff));
    double s = 0, m = 0;
    k.sum_max(a.data(), n, &s, &m);
    CHECK(std::abs(s - static_cast<double>(sum)) < 1e-12 * std::max(1.0L, std::abs(sum)) * 100);
    CHECK(m == mx);
  }
  // A NaN never wins the max (as std::max(max, x) in turn), and an empty range gives -inf.
  const std::vector<float> with_nan = {1.f, NAN, 3.f, -2.f};
  for (Isa isa : runnable_isas()) {
    double s = 0, m = 0;
    vector_sums(isa).sum_max(with_nan.data(), 4, &s, &m);
    CHECK(m == 3.0);
    CHECK(std::isnan(s));
    vector_sums(isa).sum_max(with_nan.data(), 0, &s, &m);
    CHECK((s == 0 && m == -INFINITY));
  }
}

TEST_CASE("isa kernels: AdamW's update of every variant agrees with float64", "[nn][isa]") {
  const int64_t n = GENERATE(3, 1001);
  const auto w0 = normal(n, 31), m0 = normal(n, 32, 0.1), g = normal(n, 34);
  std::vector<double> v0 = normal(n, 33, 0.01);
  for (double& x : v0) x = x * x;
  std::vector<double> w = w0, m = m0, v = v0;
  adamw_kernels(Isa::baseline).f64.update(w.data(), m.data(), v.data(), g.data(), n, 0.5, 0.9, 0.99, 1e-2, 1e-8, 1e-3);
  // The rule itself, once more by hand, for the float64 reference.
  for (int64_t i = 0; i < n; ++i) {
    const double gi = 0.5 * g[i], mi = 0.9 * m0[i] + 0.1 * gi, vi = 0.99 * v0[i] + 0.01 * gi * gi;
    CHECK(std::abs(w[i] - (w0[i] - 1e-2 * mi / (std::sqrt(vi) + 1e-8) - 1e-3 * w0[i])) < 1e-14);
  }
  for (Isa isa : runnable_isas()) {
    INFO("variant " << isa_name(isa) << ", n = " << n);
    std::vector<float> wf = to_float(w0), mf = to_float(m0), vf = to_float(v0);
    const auto gf = to_float(g);
    adamw_kernels(isa).f32.update(wf.data(), mf.data(), vf.data(), gf.data(), n, 0.5f, 0.9f, 0.99f, 1e-2f, 1e-8f, 1e-3f);
    CHECK(relative_error(wf, w) < 1e-6);
    CHECK(relative_error(mf, m) < 1e-6);
    CHECK(relative_error(vf, v) < 2e-6);
    // The measured form: update()'s bits, and the sum of squared changes sum_squared_diff takes.
    std::vector<float> wq = to_float(w0), mq = to_float(m0), vq = to_float(v0);
    const double sq = adamw_kernels(isa).f32.update_measured(wq.data(), mq.data(), vq.data(), gf.data(), n, 0.5f, 0.9f,
                                                             0.99f, 1e-2f, 1e-8f, 1e-3f);
    CHECK(wq == wf);
    CHECK(mq == mf);
    CHECK(vq == vf);
    const std::vector<float> before = to_float(w0);
    CHECK(sq == vector_sums(isa).sum_squared_diff(wq.data(), before.data(), n));
    double direct = 0;
    for (int64_t i = 0; i < n; ++i) direct += (w[i] - w0[i]) * (w[i] - w0[i]);  // float64's update
    CHECK(std::abs(sq - direct) < 1e-5 * direct);
  }
}

// Additions and one multiplication per element never contract into an FMA, and each element's
// sum runs in the order vector_ops.h states: every variant gives the plain loop's bits.
template <typename T>
void check_vector_ops_bitwise(int64_t cols) {
  const int64_t rows = 13;
  const int64_t ld = cols + 3;                                   // the caller's column range of a wider matrix
  const auto src = normal(rows * ld, 41), big = normal(rows * cols, 42), small = normal(cols, 43), base = normal(cols, 44);
  const std::vector<T> s(src.begin(), src.end()), bg(big.begin(), big.end()), sm(small.begin(), small.end()),
      b0(base.begin(), base.end());
  std::vector<T> sums = b0, added = b0, rows_out(static_cast<size_t>(rows * cols)), scaled = b0;
  std::vector<T> sums_bf16 = b0;  // the bf16 sums round each term (float); double's are the plain sums
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      sums[c] += s[r * ld + c];
      if constexpr (std::is_same_v<T, float>) sums_bf16[c] += round_bf16(s[r * ld + c]);
      else sums_bf16[c] += s[r * ld + c];
    }
  if constexpr (std::is_same_v<T, float>) CHECK(sums_bf16 != sums);
  for (int64_t c = 0; c < cols; ++c) added[c] += s[c];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) rows_out[r * cols + c] = bg[r * cols + c] + sm[c];
  for (T& x : scaled) x *= T(0.37);
  for (Isa isa : runnable_isas()) {
    INFO("variant " << isa_name(isa) << ", cols = " << cols << ", " << (sizeof(T) == 4 ? "float" : "double"));
    const VectorOpFns<T>& k = vector_ops(isa).get<T>();
    std::vector<T> got = b0;
    k.column_sums_into(got.data(), s.data(), rows, cols, ld);
    CHECK(got == sums);
    got = b0;
    k.column_bf16_sums_into(got.data(), s.data(), rows, cols, ld);
    CHECK(got == sums_bf16);
    got = b0;
    k.add_into(got.data(), s.data(), cols);
    CHECK(got == added);
    got.assign(static_cast<size_t>(rows * cols), T(-1));
    k.add_rows(got.data(), bg.data(), sm.data(), rows, cols);
    CHECK(got == rows_out);
    got = b0;
    k.scale(got.data(), T(0.37), cols);
    CHECK(got == scaled);
  }
}

// The transpose is a copy: every element lands at its mirrored place, exactly, whole register tiles
// and ragged edges both ways; both leading dimensions wider than the matrices, and what lies
// between the rows of the destination left alone.
template <typename T>
void check_transpose(int64_t rows, int64_t cols) {
  const int64_t ld_src = cols + 5, ld_dst = rows + 3;
  const auto src = normal(rows * ld_src, 45);
  const std::vector<T> s(src.begin(), src.end());
  for (Isa isa : runnable_isas()) {
    INFO("variant " << isa_name(isa) << ", " << rows << " x " << cols << ", " << (sizeof(T) == 4 ? "float" : "double"));
    std::vector<T> got(static_cast<size_t>(cols * ld_dst), T(-7));
    vector_ops(isa).get<T>().transpose(got.data(), ld_dst, s.data(), ld_src, rows, cols);
    for (int64_t c = 0; c < cols; ++c) {
      for (int64_t r = 0; r < rows; ++r) REQUIRE(got[c * ld_dst + r] == s[r * ld_src + c]);
      for (int64_t r = rows; r < ld_dst; ++r) REQUIRE(got[c * ld_dst + r] == T(-7));
    }
  }
}

TEST_CASE("isa kernels: the transpose of every variant moves each element to its mirrored place", "[nn][isa]") {
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {3, 70}, {16, 16}, {32, 48}, {37, 53}, {256, 384}}) {
    check_transpose<float>(rows, cols);
    check_transpose<double>(rows, cols);
  }
}

TEST_CASE("isa kernels: the element-wise vector ops of every variant give the plain loop's bits", "[nn][isa]") {
  for (int64_t cols : {1, 5, 16, 67, 192}) {  // below one vector, ragged tails, one block and more
    check_vector_ops_bitwise<float>(cols);
    check_vector_ops_bitwise<double>(cols);
  }
}
