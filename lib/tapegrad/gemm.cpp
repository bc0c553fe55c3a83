#include "tapegrad/gemm.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>

#include "tapegrad/error.h"
#include "tapegrad/isa.h"
#include "tapegrad/libxsmm_gemm.h"
#include "tapegrad/threads.h"

namespace tapegrad {

namespace {

GemmThreading g_mode = GemmThreading::kSplit;

// Below this many multiply-adds, waking a second thread costs more than it saves
// (bench_gemm: a 64x64x64 product takes ~10 us on one core).
constexpr int64_t kSplitMinFlops = int64_t{64} * 64 * 64;

CBLAS_TRANSPOSE cblas_trans(Trans t) { return t == Trans::kYes ? CblasTrans : CblasNoTrans; }

std::string_view unavailable_reason() {
  if (!detail::libxsmm_compiled()) return "this build has no libxsmm (Debian/Ubuntu: apt-get install libxsmm-dev, then rebuild)";
  if (active_isa() == Isa::baseline) return "the kernel variant is baseline (TAPEGRAD_ISA), which runs OpenBLAS only";
  return {};
}

GemmKernels initial_kernels() {
  const char* forced = std::getenv("TAPEGRAD_GEMM");
  // By default only with AVX-512: libxsmm's AVX2 code measured 1.00-1.10x OpenBLAS's AVX2 step
  // (backward products only; bench_step --gemm-ab, bench/RESULTS.md), its AVX-512 code 0.59-0.60x.
  if (forced == nullptr || *forced == '\0')
    return libxsmm_available() && active_isa() == Isa::avx512 ? GemmKernels::kLibxsmm : GemmKernels::kOpenBlas;
  return parse_gemm_kernels(forced, "TAPEGRAD_GEMM");
}

std::atomic<GemmKernels>& kernels_state() {
  static std::atomic<GemmKernels> state{initial_kernels()};
  return state;
}

void blas(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (g_mode == GemmThreading::kSplit && kernels_state().load(std::memory_order_relaxed) == GemmKernels::kLibxsmm &&
      detail::libxsmm_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))
    return;
  cblas_sgemm(CblasRowMajor, cblas_trans(ta), cblas_trans(tb), static_cast<int>(M), static_cast<int>(N),
              static_cast<int>(K), alpha, A, static_cast<int>(lda), B, static_cast<int>(ldb), beta, C,
              static_cast<int>(ldc));
}

void blas(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, double alpha, const double* A,
          int64_t lda, const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, cblas_trans(ta), cblas_trans(tb), static_cast<int>(M), static_cast<int>(N),
              static_cast<int>(K), alpha, A, static_cast<int>(lda), B, static_cast<int>(ldb), beta, C,
              static_cast<int>(ldc));
}

// [begin, end) of part `i` of `n` parts of [0, total), boundaries on multiples of 8 elements.
std::pair<int64_t, int64_t> slab(int64_t total, int i, int n) {
  const int64_t chunk = (total + n - 1) / n;
  const int64_t step = (chunk + 7) / 8 * 8;
  return {std::min(total, i * step), std::min(total, (i + 1) * step)};
}

}  // namespace

void set_gemm_threading(GemmThreading mode) {
  g_mode = mode;
  set_num_threads(num_threads());  // re-applies OpenBLAS's thread count for the new mode
}

GemmThreading gemm_threading() { return g_mode; }

bool libxsmm_available() { return unavailable_reason().empty(); }

GemmKernels parse_gemm_kernels(std::string_view name, std::string_view what) {
  if (name == "openblas") return GemmKernels::kOpenBlas;
  check(name == "libxsmm", what, " '", name, "': unknown GEMM kernels; known: libxsmm, openblas");
  check(libxsmm_available(), what, " 'libxsmm': unavailable here: ", unavailable_reason());
  return GemmKernels::kLibxsmm;
}

void set_gemm_kernels(GemmKernels kernels) {
  check(kernels == GemmKernels::kOpenBlas || libxsmm_available(), "set_gemm_kernels(kLibxsmm): unavailable here: ",
        unavailable_reason());
  kernels_state() = kernels;
}

GemmKernels gemm_kernels() { return kernels_state(); }

std::string_view gemm_kernels_name() {
  return gemm_kernels() == GemmKernels::kLibxsmm ? "openblas+libxsmm" : "openblas";
}

template <typename T>
void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
          const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  const int threads = num_threads();  // also configures OpenBLAS on first use
  if (g_mode == GemmThreading::kOpenBlas || threads == 1 || omp_in_parallel() ||
      M * N * K < kSplitMinFlops) {
    blas(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    const int n = omp_get_num_threads();
    if (M >= N) {  // slabs of rows of C: rows of op(A)
      const auto [m0, m1] = slab(M, t, n);
      if (m1 > m0) {
        const T* a = ta == Trans::kNo ? A + m0 * lda : A + m0;
        blas(ta, tb, m1 - m0, N, K, alpha, a, lda, B, ldb, beta, C + m0 * ldc, ldc);
      }
    } else {  // slabs of columns of C: columns of op(B)
      const auto [n0, n1] = slab(N, t, n);
      if (n1 > n0) {
        const T* b = tb == Trans::kNo ? B + n0 : B + n0 * ldb;
        blas(ta, tb, M, n1 - n0, K, alpha, A, lda, b, ldb, beta, C + n0, ldc);
      }
    }
  }
}

template <typename T>
void gemm_batched(int64_t batch, Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, T alpha,
                  const T* A, int64_t lda, int64_t stride_a, const T* B, int64_t ldb, int64_t stride_b,
                  T beta, T* C, int64_t ldc, int64_t stride_c) {
  if (batch == 1) {
    gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  const int threads = num_threads();
  const bool parallel = g_mode == GemmThreading::kSplit && threads > 1 && !omp_in_parallel();
#pragma omp parallel for schedule(static) num_threads(threads) if (parallel)
  for (int64_t i = 0; i < batch; ++i)
    blas(ta, tb, M, N, K, alpha, A + i * stride_a, lda, B + i * stride_b, ldb, beta, C + i * stride_c, ldc);
}

template void gemm<float>(Trans, Trans, int64_t, int64_t, int64_t, float, const float*, int64_t,
                          const float*, int64_t, float, float*, int64_t);
template void gemm<double>(Trans, Trans, int64_t, int64_t, int64_t, double, const double*, int64_t,
                           const double*, int64_t, double, double*, int64_t);
template void gemm_batched<float>(int64_t, Trans, Trans, int64_t, int64_t, int64_t, float, const float*,
                                  int64_t, int64_t, const float*, int64_t, int64_t, float, float*,
                                  int64_t, int64_t);
template void gemm_batched<double>(int64_t, Trans, Trans, int64_t, int64_t, int64_t, double,
                                   const double*, int64_t, int64_t, const double*, int64_t, int64_t,
                                   double, double*, int64_t, int64_t);

}  // namespace tapegrad
