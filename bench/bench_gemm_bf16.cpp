// The mixed-precision GEMM (gemm_bf16.h) against the float32 one, at the training step's shapes.
//   f32       tapegrad::gemm<float> (OpenBLAS, libxsmm where it runs)
//   amx       gemm_bf16 on AMX tiles (skipped where the CPU lacks them)
//   avx512_bf16  gemm_bf16 on AVX512-BF16 micro-kernels (skipped where the CPU lacks them)
//   emulated  gemm_bf16 rounding the operands and calling the float32 GEMM
// Shapes (M, N, K, which product): the L4 C128/C256 T64 B12 decoder's, B*T = 768 rows —
// forward x W^T (kind 0), dx = dy W (1), dW = dy^T x (2), for the QKV (3C) and MLP (4C) layers.
// Run: build/bench/bench_gemm_bf16 --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <vector>

#include "tapegrad/gemm_bf16.h"
#include "tapegrad/random.h"
#include "tapegrad/threads.h"

namespace {
using namespace tapegrad;

enum Kind { kF32, kAmx, kAvx512, kEmulated };

// (out, in) of a linear layer at rows 768; kind 0/1/2 as above.
void run(benchmark::State& st, Kind kind) {
  const int64_t out = st.range(0), in = st.range(1), product = st.range(2), rows = 768;
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
  for (int64_t C : {128, 256})
    for (int64_t product : {0, 1, 2}) {
      b->Args({3 * C, C, product, 2});
      b->Args({4 * C, C, product, 2});
    }
}

}  // namespace

BENCHMARK_CAPTURE(run, f32, kF32)->Apply(shapes)->UseRealTime();
BENCHMARK_CAPTURE(run, amx, kAmx)->Apply(shapes)->UseRealTime();
BENCHMARK_CAPTURE(run, avx512_bf16, kAvx512)->Apply(shapes)->UseRealTime();
BENCHMARK_CAPTURE(run, emulated, kEmulated)->Apply(shapes)->UseRealTime();

BENCHMARK_MAIN();
