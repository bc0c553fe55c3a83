#include "tapegrad/libxsmm_gemm.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "tapegrad/isa.h"
#include "tapegrad/vector_ops.h"

#if defined(TAPEGRAD_HAVE_LIBXSMM)
#include <libxsmm.h>
#endif

namespace tapegrad::detail {

namespace {
// A transposed B is copied before the product: N K elements moved against 2 M N K FLOPs, a few
// per cent of the product's time from M = 64 rows on, a loss for fewer (a generation step's row).
constexpr int64_t kMinRowsToTranspose = 64;
// The panel of B one kernel call reads (see libxsmm_sgemm): at most kPanel floats (512 KiB), K cut
// into blocks of at most kInnerBlock.
constexpr int64_t kPanel = int64_t{1} << 17;
constexpr int64_t kInnerBlock = 512;
constexpr int64_t kLanes = 16;  // column blocks are whole AVX-512 registers of floats

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

bool libxsmm_takes(Trans tb, int64_t M, int64_t N, int64_t K, float alpha, float beta) {
  if (M < 1 || N < 1 || K < 1 || alpha != 1.f || (beta != 0.f && beta != 1.f)) return false;
  return tb == Trans::kNo || M >= kMinRowsToTranspose;
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
  // Column-major view: C^T (N x M) = B^T (N x K) op(A)^T (K x M). A row-major matrix read
  // column-major is its transpose, so B is libxsmm's first operand as stored and A its second,
  // transposed in that view exactly when op(A) is A^T here.
  //
  // libxsmm 1.17's kernels block registers, not caches: each group of C's rows streams the whole
  // of its B. So, as BLAS libraries pack their operands, B is taken in panels of at most kPanel
  // floats (half this machine's 1 MiB L2): K in blocks of at most kInnerBlock, N in equal blocks
  // of whole registers; C's column block accumulates over K's blocks (beta 1 after the first).
  // A transposed B (N x K, the forward's x W^T: libxsmm 1.17 generates no kernel reading it) is
  // transposed one panel at a time into this thread's scratch, where the kernel finds it in L2.
  // `bench/gemm_ab --dim 256` compares one call with the panels per shape (bench/RESULTS.md);
  // C64's and C128's products are one panel. An element's K terms are summed in k order either way.
  const int64_t inner = ceil_div(K, ceil_div(K, kInnerBlock));
  const int64_t max_cols = std::max(kLanes, kPanel / inner / kLanes * kLanes);
  const int64_t cols = N <= max_cols ? N : ceil_div(ceil_div(N, ceil_div(N, max_cols)), kLanes) * kLanes;
  const int64_t cols_edge = N % cols, inner_edge = K % inner;
  const bool packed = tb == Trans::kYes;
  const libxsmm_blasint ldb_x = static_cast<libxsmm_blasint>(lda), ldc_x = static_cast<libxsmm_blasint>(ldc),
                        n = static_cast<libxsmm_blasint>(M);
  const int flags = ta == Trans::kYes ? LIBXSMM_GEMM_FLAG_TRANS_B : 0;
  const float one = 1.f;
  // Every kernel the panels need (first or later K block, full or edge sizes) is generated before
  // C is touched, so a shape libxsmm declines leaves C as it was.
  libxsmm_smmfunction kernels[2][2][2] = {};  // [edge column block][edge K block][not the first K block]
  for (int ce = 0; ce < 2; ++ce)
    for (int ke = 0; ke < 2; ++ke)
      for (int later = 0; later < 2; ++later) {
        const int64_t c = ce ? cols_edge : cols, kk = ke ? inner_edge : inner;
        if (c == 0 || kk == 0 || (later && K <= inner) || (ke && !later)) continue;  // an edge K block is never the first
        const libxsmm_blasint m = static_cast<libxsmm_blasint>(c), k = static_cast<libxsmm_blasint>(kk),
                              lda_x = static_cast<libxsmm_blasint>(packed ? c : ldb);
        kernels[ce][ke][later] =
            libxsmm_smmdispatch(m, n, k, &lda_x, &ldb_x, &ldc_x, &alpha, later ? &one : &beta, &flags, nullptr);
        if (kernels[ce][ke][later] == nullptr) return false;
      }
  // The scratch holds one panel; allocated on a thread's first transposed product, then reused.
  thread_local std::vector<float> panel;
  if (packed && panel.size() < static_cast<size_t>(kPanel)) panel.resize(static_cast<size_t>(kPanel));
  const auto& transpose = vector_ops().f32.transpose;
  for (int64_t n0 = 0; n0 < N; n0 += cols) {
    const int64_t c = std::min(cols, N - n0);
    for (int64_t k0 = 0; k0 < K; k0 += inner) {
      const int64_t kk = std::min(inner, K - k0);
      const float* b = B + k0 * ldb + n0;
      if (packed) {  // B's rows n0.. (c of them), columns k0.. (kk): their transpose, kk x c
        transpose(panel.data(), c, B + n0 * ldb + k0, ldb, c, kk);
        b = panel.data();
      }
      const float* a = ta == Trans::kYes ? A + k0 * lda : A + k0;
      kernels[c < cols][kk < inner][k0 > 0](b, a, C + n0);
    }
  }
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
