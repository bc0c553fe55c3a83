#include "tapegrad/libxsmm_gemm.h"

#include <limits>
#include <vector>

#include "tapegrad/isa.h"

#if defined(TAPEGRAD_HAVE_LIBXSMM)
#include <libxsmm.h>
#endif

namespace tapegrad::detail {

namespace {
constexpr int64_t kMaxInner = 2048;
// A transposed B is copied before the product: N K elements moved against 2 M N K FLOPs, a few
// per cent of the product's time from M = 64 rows on, a loss for fewer (a generation step's row).
constexpr int64_t kMinRowsToTranspose = 64;
constexpr int64_t kMaxTransposed = int64_t{1} << 22;  // elements of B^T: 16 MiB of scratch per thread
}  // namespace

bool libxsmm_takes(Trans tb, int64_t M, int64_t N, int64_t K, float alpha, float beta) {
  if (K < 1 || K > kMaxInner || alpha != 1.f || (beta != 0.f && beta != 1.f)) return false;
  return tb == Trans::kNo || (M >= kMinRowsToTranspose && N >= 0 && N <= kMaxTransposed / K);  // N K without overflow
}

#if defined(TAPEGRAD_HAVE_LIBXSMM)

bool libxsmm_compiled() { return true; }

namespace {
// libxsmm set up once per process, its code generation pinned to the kernel variant, so that
// TAPEGRAD_ISA=avx2 on an AVX-512 machine runs AVX2 code here as in the hand kernels.
struct Library {
  Library() {
    libxsmm_init();
    libxsmm_set_verbosity(0);
    libxsmm_set_target_arch(active_isa() == Isa::avx512 ? "skx" : "hsw");
  }
};
}  // namespace

bool libxsmm_sgemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                   const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  constexpr int64_t kMax = std::numeric_limits<libxsmm_blasint>::max();
  if (!libxsmm_takes(tb, M, N, K, alpha, beta) || active_isa() == Isa::baseline || M > kMax || N > kMax ||
      lda > kMax || ldb > kMax || ldc > kMax)
    return false;
  static const Library library;
  if (tb == Trans::kYes) {
    // B is N x K (row-major, ldb); libxsmm 1.17 generates no kernel that reads it transposed in
    // its column-major view, so B^T (K x N, ld N) is written to this thread's scratch first — as
    // BLAS libraries pack their operands — by libxsmm's own transpose. The scratch only grows, so
    // a training loop allocates nothing after its first step.
    thread_local std::vector<float> transposed;
    if (transposed.size() < static_cast<size_t>(N * K)) transposed.resize(static_cast<size_t>(N * K));
    // Column-major, B is K x N with leading dimension ldb; its transpose N x K with ld N is B^T
    // row-major.
    libxsmm_otrans(transposed.data(), B, sizeof(float), static_cast<libxsmm_blasint>(K),
                   static_cast<libxsmm_blasint>(N), static_cast<libxsmm_blasint>(ldb), static_cast<libxsmm_blasint>(N));
    B = transposed.data();
    ldb = N;
  }
  // Column-major view: C^T (N x M) = B^T (N x K) op(A)^T (K x M). A row-major matrix read
  // column-major is its transpose, so B is libxsmm's first operand as stored and A its second,
  // transposed in that view exactly when op(A) is A^T here.
  const libxsmm_blasint m = static_cast<libxsmm_blasint>(N), n = static_cast<libxsmm_blasint>(M),
                        k = static_cast<libxsmm_blasint>(K), lda_x = static_cast<libxsmm_blasint>(ldb),
                        ldb_x = static_cast<libxsmm_blasint>(lda), ldc_x = static_cast<libxsmm_blasint>(ldc);
  const int flags = ta == Trans::kYes ? LIBXSMM_GEMM_FLAG_TRANS_B : 0;
  const libxsmm_smmfunction kernel = libxsmm_smmdispatch(m, n, k, &lda_x, &ldb_x, &ldc_x, &alpha, &beta, &flags, nullptr);
  if (kernel == nullptr) return false;
  kernel(B, A, C);
  return true;
}

#else

bool libxsmm_compiled() { return false; }

bool libxsmm_sgemm(Trans, Trans, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t, float,
                   float*, int64_t) {
  return false;
}

#endif

}  // namespace tapegrad::detail
