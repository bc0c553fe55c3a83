// Which GEMM path is fastest at tapegrad's sizes, and how should it use the two cores?
//   cblas/split     tapegrad::gemm: rows of C split over OpenMP threads, single-threaded OpenBLAS
//   cblas/openblas  one cblas_sgemm call, OpenBLAS's own pthreads
//   eigen/own       Eigen's built-in product (parallelised with OpenMP)
//   eigen/blas      Eigen with EIGEN_USE_BLAS (forwards to OpenBLAS's sgemm_)
// plus "gemm+eltwise": a GEMM followed by an OpenMP element-wise kernel, as in a training step,
// which exposes the oversubscription of two spinning thread pools.
// Shapes (M, N, K) are the products of the L4 H4 C128 T64 B12 model: B*T = 768 rows.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <omp.h>

#include <Eigen/Core>
#include <cmath>
#include <vector>

#include "tapegrad/gemm.h"
#include "tapegrad/random.h"
#include "tapegrad/threads.h"

void eigen_blas_product(int M, int N, int K, const float* A, const float* B, float* C);

namespace {
using namespace tapegrad;

struct Operands {
  std::vector<float> a, b, c;
  Operands(int64_t M, int64_t N, int64_t K) : a(M * K), b(K * N), c(M * N) {
    Rng rng(1);
    for (auto& x : a) x = static_cast<float>(rng.normal());
    for (auto& x : b) x = static_cast<float>(rng.normal());
  }
};

void set_flops(benchmark::State& st, int64_t M, int64_t N, int64_t K) {
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * M * N * K * static_cast<double>(st.iterations()),
                                              benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

void BM_cblas(benchmark::State& st, GemmThreading mode) {
  const int64_t M = st.range(0), N = st.range(1), K = st.range(2);
  const int threads = static_cast<int>(st.range(3));
  set_gemm_threading(mode);
  set_num_threads(threads);
  Operands o(M, N, K);
  for (auto _ : st) {
    gemm<float>(Trans::kNo, Trans::kNo, M, N, K, 1.f, o.a.data(), K, o.b.data(), N, 0.f, o.c.data(), N);
    benchmark::DoNotOptimize(o.c.data());
  }
  set_flops(st, M, N, K);
  set_gemm_threading(GemmThreading::kSplit);
}

void BM_eigen_own(benchmark::State& st) {
  const int64_t M = st.range(0), N = st.range(1), K = st.range(2);
  set_num_threads(static_cast<int>(st.range(3)));
  Eigen::setNbThreads(static_cast<int>(st.range(3)));
  using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Operands o(M, N, K);
  Eigen::Map<const Mat> a(o.a.data(), M, K), b(o.b.data(), K, N);
  Eigen::Map<Mat> c(o.c.data(), M, N);
  for (auto _ : st) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(o.c.data());
  }
  set_flops(st, M, N, K);
}

void BM_eigen_blas(benchmark::State& st) {
  const int64_t M = st.range(0), N = st.range(1), K = st.range(2);
  set_gemm_threading(GemmThreading::kOpenBlas);  // Eigen's BLAS path is one call from one thread
  set_num_threads(static_cast<int>(st.range(3)));
  Operands o(M, N, K);
  for (auto _ : st) {
    eigen_blas_product(static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), o.a.data(),
                       o.b.data(), o.c.data());
    benchmark::DoNotOptimize(o.c.data());
  }
  set_flops(st, M, N, K);
  set_gemm_threading(GemmThreading::kSplit);
}

// A GEMM, then tanh over its output with OpenMP: the pattern of Linear -> GELU in a step.
void BM_gemm_then_eltwise(benchmark::State& st, GemmThreading mode) {
  const int64_t M = 768, N = 512, K = 128;
  set_gemm_threading(mode);
  set_num_threads(2);
  Operands o(M, N, K);
  std::vector<float> out(M * N);
  for (auto _ : st) {
    gemm<float>(Trans::kNo, Trans::kNo, M, N, K, 1.f, o.a.data(), K, o.b.data(), N, 0.f, o.c.data(), N);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < M * N; ++i) out[i] = std::tanh(o.c[i]);
    benchmark::DoNotOptimize(out.data());
  }
  set_gemm_threading(GemmThreading::kSplit);
}

void shapes(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2}) {
    b->Args({768, 384, 128, threads});  // qkv projection
    b->Args({768, 512, 128, threads});  // mlp fc
    b->Args({768, 128, 512, threads});  // mlp proj
    b->Args({384, 128, 768, threads});  // a weight gradient (K = B*T)
    b->Args({768, 65, 128, threads});   // lm head
    b->Args({64, 64, 32, threads});     // one head's attention scores
  }
  b->ArgNames({"M", "N", "K", "threads"})->UseRealTime();
}

BENCHMARK_CAPTURE(BM_cblas, split, GemmThreading::kSplit)->Apply(shapes);
BENCHMARK_CAPTURE(BM_cblas, openblas, GemmThreading::kOpenBlas)->Apply(shapes);
BENCHMARK(BM_eigen_own)->Apply(shapes);
BENCHMARK(BM_eigen_blas)->Apply(shapes);
BENCHMARK_CAPTURE(BM_gemm_then_eltwise, split, GemmThreading::kSplit)->UseRealTime();
BENCHMARK_CAPTURE(BM_gemm_then_eltwise, openblas, GemmThreading::kOpenBlas)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
