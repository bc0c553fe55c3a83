// The float attention core's own kernels (attention_head_kernels.h) against the GEMM path they
// replace (attention_core_*_reference) and against float64: forward P, y and the largest logit,
// backward dq, dk, dv — at head sizes of one to four vectors, sequence lengths that are and are
// not multiples of the kernels' blocks, one and two threads; and the results' independence of
// where the data sits in memory (the bitwise reproducibility training relies on).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "tapegrad/nn/attention.h"
#include "tapegrad/nn/attention_head_kernels.h"
#include "tapegrad/random.h"
#include "tapegrad/threads.h"

using namespace tapegrad;
using namespace tapegrad::nn;

namespace {

template <typename T>
std::vector<T> normal(int64_t n, uint64_t seed, double sd) {
  Rng rng(seed);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) x = static_cast<T>(sd * rng.normal());
  return v;
}

template <typename T>
struct CoreRun {
  std::vector<T> P, y, dqkv;
  T max_logit;
};

// The core forward and backward on copies of qkv and dy placed `offset` elements into their
// buffers; `reference` picks the GEMM path.
template <typename T, typename Src>
CoreRun<T> run_core(const AttentionDims& d, const std::vector<Src>& qkv_in, const std::vector<Src>& dy_in, bool reference,
                    int64_t offset = 0) {
  const int64_t rows = d.B * d.T;
  std::vector<T> qkv(static_cast<size_t>(offset + rows * 3 * d.C)), dy(static_cast<size_t>(offset + rows * d.C));
  std::copy(qkv_in.begin(), qkv_in.end(), qkv.begin() + offset);
  std::copy(dy_in.begin(), dy_in.end(), dy.begin() + offset);
  CoreRun<T> r;
  r.P.assign(static_cast<size_t>(d.B * d.NH * d.T * d.T), T(0));
  r.y.assign(static_cast<size_t>(rows * d.C), T(0));
  r.dqkv.assign(static_cast<size_t>(rows * 3 * d.C), T(0));
  std::vector<T> scratch(static_cast<size_t>(std::max<int64_t>(
      {attention_core_scratch<T>(d, false), attention_core_scratch<T>(d, true), num_threads() * d.T * d.T})));
  if (reference) {
    r.max_logit = attention_core_forward_reference(r.P.data(), r.y.data(), qkv.data() + offset, d);
    attention_core_backward_reference(r.dqkv.data(), scratch.data(), dy.data() + offset, qkv.data() + offset, r.P.data(), d);
  } else {
    r.max_logit = attention_core_forward(r.P.data(), r.y.data(), qkv.data() + offset, d, scratch.data());
    attention_core_backward(r.dqkv.data(), scratch.data(), dy.data() + offset, qkv.data() + offset, r.P.data(), d);
  }
  return r;
}

// max |a - exact| / max |exact|
double relative_error(const std::vector<float>& a, const std::vector<double>& exact) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    err = std::max(err, std::abs(a[i] - exact[i]));
    scale = std::max(scale, std::abs(exact[i]));
  }
  return err / scale;
}

}  // namespace

TEST_CASE("attention head kernels: agree with the GEMM path and with float64", "[nn][attention]") {
  // (B, T, C, NH): heads of 16, 32, 48 and 64 features; T of one position, below one block,
  // a block and one, the toy model's 64, and 70 (neither the 16-column vectors nor the row
  // blocks divide it).
  const auto [B, Tn, C, NH] = GENERATE(std::tuple{2, 64, 64, 4}, std::tuple{1, 17, 32, 1}, std::tuple{2, 5, 96, 2},
                                       std::tuple{1, 70, 128, 2}, std::tuple{3, 1, 16, 1}, std::tuple{2, 33, 128, 4},
                                       std::tuple{1, 9, 64, 2});
  const int threads = GENERATE(1, 2);
  INFO("B" << B << " T" << Tn << " C" << C << " NH" << NH << ", " << threads << " threads");
  set_num_threads(threads);
  const AttentionDims d{B, Tn, C, NH};
  if (!head_kernels_support(d.HS())) {
    WARN("this build has no AVX: the float core runs the GEMM path, and these kernels are unused");
    return;
  }
  const std::vector<float> qkv = normal<float>(B * Tn * 3 * C, 1, 1.5), dy = normal<float>(B * Tn * C, 2, 1.0);
  const CoreRun<float> fast = run_core<float>(d, qkv, dy, false);
  const CoreRun<float> gemm = run_core<float>(d, qkv, dy, true);
  const CoreRun<double> exact = run_core<double>(d, qkv, dy, true);
  set_num_threads(0);

  for (int64_t h = 0; h < B * NH; ++h)  // probabilities above the diagonal: exactly zero
    for (int64_t i = 0; i < Tn; ++i)
      for (int64_t j = i + 1; j < Tn; ++j) REQUIRE(fast.P[static_cast<size_t>((h * Tn + i) * Tn + j)] == 0.0f);
  // float32 sums over HS (logits) and T (outputs) terms: ~1e-7 relative per term's rounding.
  CHECK(std::abs(fast.max_logit - exact.max_logit) <= 1e-6 * std::abs(exact.max_logit));
  CHECK(relative_error(fast.P, exact.P) < 2e-6);
  CHECK(relative_error(fast.y, exact.y) < 2e-6);
  CHECK(relative_error(fast.dqkv, exact.dqkv) < 5e-6);
  // And no worse than the GEMM path's own float32 rounding, give or take a factor.
  CHECK(relative_error(fast.dqkv, exact.dqkv) < 4 * relative_error(gemm.dqkv, exact.dqkv) + 1e-6);
}

TEST_CASE("attention head kernels: results do not depend on where the data sits", "[nn][attention]") {
  const AttentionDims d{2, 37, 64, 2};  // heads of 32
  set_num_threads(1);
  const std::vector<float> qkv = normal<float>(d.B * d.T * 3 * d.C, 3, 1.0), dy = normal<float>(d.B * d.T * d.C, 4, 1.0);
  const CoreRun<float> a = run_core<float>(d, qkv, dy, false, 0);
  for (const int64_t offset : {1, 3, 7, 16}) {
    INFO("offset " << offset);
    const CoreRun<float> b = run_core<float>(d, qkv, dy, false, offset);
    CHECK(a.max_logit == b.max_logit);
    CHECK(a.P == b.P);
    CHECK(a.y == b.y);
    CHECK(a.dqkv == b.dqkv);
  }
  set_num_threads(0);
}

TEST_CASE("attention head kernels: the float path takes heads of 16 to 64 features in steps of 16", "[nn][attention]") {
#if defined(__AVX__)
  for (const int64_t HS : {16, 32, 48, 64}) CHECK(head_kernels_support(HS));
#endif
  for (const int64_t HS : {0, 1, 8, 24, 80, 128}) CHECK_FALSE(head_kernels_support(HS));
  CHECK(attention_core_scratch<double>({1, 64, 64, 4}, false) == 0);  // double: the GEMM path
}
