// The mixed-precision GEMM (gemm_bf16.h) against the float32 one, at the training step's shapes.
//   f32       tapegrad::gemm<float> (OpenBLAS, libxsmm where it runs)
//   amx       gemm_bf16 on AMX tiles (skipped where the CPU lacks them)
//   avx512_bf16  gemm_bf16 on AVX512-BF16 micro-kernels (skipped where the CPU lacks them)
//   emulated  gemm_bf16 rounding the operands and calling the float32 GEMM
//   libxsmm   libxsmm 1.17's JIT bf16 kernel (libxsmm_bsmmdispatch: bf16 in, float32 out, A in
//             its "VNNI" k-pair layout), on operands packed by gemm_bf16's own (fast) packing;
//             single call, one thread (where the build has libxsmm and the CPU AVX512-BF16): the
//             candidate against the avx512_bf16 micro-kernels
// Shapes (M, N, K, which product): the L4 C128/C256 T64 B12 decoder's, B*T = 768 rows on 2 threads
// (one op split over the threads) and 384 rows on 1 (a batch worker's half of the step, as the
// trainer runs it) — forward x W^T (kind 0), dx = dy W (1), dW = dy^T x (2), for the QKV (3C) and
// MLP (4C) layers. Args: out, in, product, threads, rows.
// Run: build/bench/bench_gemm_bf16 --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <utility>
#include <vector>

#if defined(TAPEGRAD_BENCH_LIBXSMM)
#include <libxsmm.h>
#endif

#include "tapegrad/bf16_pack.h"
#include "tapegrad/gemm_bf16.h"
#include "tapegrad/random.h"
#include "tapegrad/threads.h"

namespace {
using namespace tapegrad;

enum Kind { kF32, kAmx, kAvx512, kEmulated };

// (out, in) of a linear layer at `rows`; kind 0/1/2 as above.
void run(benchmark::State& st, Kind kind) {
  const int64_t out = st.range(0), in = st.range(1), product = st.range(2), rows = st.range(4);
  set_num_threads(static_cast<int>(st.range(3)));
  if ((kind == kAvx512 && !bf16_avx512_available()) || (kind == kAmx && !bf16_amx_available())) {
    st.SkipWithError("not available on this CPU");
    return;
  }
  if (kind != kF32)
    set_bf16_kernels(kind == kAmx ? Bf16Kernels::kAmx : kind == kAvx512 ? Bf16Kernels::kAvx512Bf16 : Bf16Kernels::kEmulated);
  Rng rng(1);
  std::vector<float> x(rows * in), w(out * in), y(rows * out), dw(out * in), dx(rows * in);
  for (float& v : x) v = static_cast<float>(rng.normal());
  for (float& v : w) v = static_cast<float>(rng.normal());
  for (float& v : y) v = static_cast<float>(rng.normal());
  const Precision p = kind == kF32 ? Precision::kFp32 : Precision::kBf16;
  for (auto _ : st) {
    if (product == 0) gemm_at<float>(p, Trans::kNo, Trans::kYes, rows, out, in, 1.f, x.data(), in, w.data(), in, 0.f, y.data(), out);
    if (product == 1) gemm_at<float>(p, Trans::kNo, Trans::kNo, rows, in, out, 1.f, y.data(), out, w.data(), in, 0.f, dx.data(), in);
    if (product == 2) gemm_at<float>(p, Trans::kYes, Trans::kNo, out, in, rows, 1.f, y.data(), out, x.data(), in, 0.f, dw.data(), in);
    benchmark::ClobberMemory();
  }
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * rows * out * in * static_cast<double>(st.iterations()),
                                              benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

void shapes(benchmark::internal::Benchmark* b) {
  for (auto [threads, rows] : {std::pair<int64_t, int64_t>{2, 768}, {1, 384}})
    for (int64_t C : {128, 256})
      for (int64_t product : {0, 1, 2}) {
        b->Args({3 * C, C, product, threads, rows});
        b->Args({4 * C, C, product, threads, rows});
      }
}

#if defined(TAPEGRAD_BENCH_LIBXSMM)
// C (row-major M x N) = op(A) op(B) is, column-major, C^T = op(B)^T op(A)^T: libxsmm's A is op(B)^T
// (N x K) in VNNI pairs, [K/2][N][2] — gemm_bf16's B panel layout over all N — and its B is op(A)^T
// (K x M) column-major, i.e. op(A) row-major in bf16.
void run_libxsmm(benchmark::State& st) {
  const int64_t out = st.range(0), in = st.range(1), product = st.range(2), rows = st.range(4);
  if (!bf16_avx512_available()) {
    st.SkipWithError("no AVX512-BF16 here");
    return;
  }
  int64_t M = rows, N = out, K = in;
  Trans ta = Trans::kNo, tb = Trans::kYes;
  if (product == 1) M = rows, N = in, K = out, tb = Trans::kNo;
  if (product == 2) M = out, N = in, K = rows, ta = Trans::kYes, tb = Trans::kNo;
  Rng rng(1);
  std::vector<float> a(M * K), b(K * N), c(M * N);
  for (float& v : a) v = static_cast<float>(rng.normal());
  for (float& v : b) v = static_cast<float>(rng.normal());
  const int64_t kp = (K + 1) / 2;
  std::vector<uint32_t> bv(static_cast<size_t>(kp * N));
  std::vector<uint16_t> ab(static_cast<size_t>(M * 2 * kp));
  const libxsmm_blasint m = N, n = M, k = 2 * kp, lda = N, ldb = 2 * kp, ldc = N;
  const float alpha = 1, beta = 0;
  const int flags = LIBXSMM_GEMM_FLAG_VNNI_A;
  const libxsmm_bsmmfunction kernel = libxsmm_bsmmdispatch(m, n, k, &lda, &ldb, &ldc, &alpha, &beta, &flags, nullptr);
  if (kernel == nullptr) {
    st.SkipWithError("libxsmm generated no bf16 kernel for this shape");
    return;
  }
  const detail::PackOperand pa{a.data(), ta == Trans::kYes ? M : K, ta == Trans::kYes};
  const detail::PackOperand pb{b.data(), tb == Trans::kYes ? K : N, tb == Trans::kNo};
  for (auto _ : st) {  // the same packing work as gemm_bf16: both operands rounded once per call
    detail::pack_pairs_fast(bv.data(), N, 1, pb, 0, N, N, 0, K, kp);
    detail::pack_pairs_fast(reinterpret_cast<uint32_t*>(ab.data()), 1, kp, pa, 0, M, M, 0, K, kp);
    kernel(reinterpret_cast<const libxsmm_bfloat16*>(bv.data()), ab.data(), c.data());
    benchmark::ClobberMemory();
  }
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * M * N * K * static_cast<double>(st.iterations()),
                                              benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
#endif

}  // namespace

#if defined(TAPEGRAD_BENCH_LIBXSMM)
BENCHMARK(run_libxsmm)->Apply(shapes)->UseRealTime();
#endif
BENCHMARK_CAPTURE(run, f32, kF32)->Apply(shapes)->UseRealTime();
BENCHMARK_CAPTURE(run, amx, kAmx)->Apply(shapes)->UseRealTime();
BENCHMARK_CAPTURE(run, avx512_bf16, kAvx512)->Apply(shapes)->UseRealTime();
BENCHMARK_CAPTURE(run, emulated, kEmulated)->Apply(shapes)->UseRealTime();

BENCHMARK_MAIN();
