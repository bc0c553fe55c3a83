// The AVX512-BF16 GEMM (gemm_bf16.h). Its functions carry the target attribute (no x86-64 level
// includes AVX512-BF16), so the file itself compiles for the baseline and the templates it
// instantiates (std::vector's) are baseline code another file may share; called only where the CPU
// has AVX512-BF16 (bf16_avx512_available).
//
// vdpbf16ps acc, a, b computes, per float32 lane i: acc[i] += a[2i] b[2i] + a[2i+1] b[2i+1]. With a
// holding one pair (A(m,k), A(m,k+1)) in every lane and b the pairs (B(k,n), B(k+1,n)) of 16
// columns n, one instruction adds two k-steps of row m to 16 elements of C. So both operands are
// packed, once per k-block, into k-pair-interleaved panels (and rounded to bf16 as they are):
//   A tile (kMR rows):    ap[p * kMR + r]            = pair(A(m0 + r, k0 + 2p), A(m0 + r, k0 + 2p + 1))
//   B panel (kNR cols):   bp[(p * kNR + c) * 2 + h]  = B(k0 + 2p + h, n0 + c)
// zero-padded past M, N and an odd K. An A tile has one of two layouts, whichever its packing
// writes with whole-vector stores:
//   rows   (op(A) = A, rows of A in memory)        ap[r * kRowWords + p]
//   pairs  (op(A) = A^T, columns of A in memory)  ap[p * kMR + r]
// (rows of pairs come straight out of rows of A; the pair-major layout would need a transpose of
// every 16 pairs, and that transpose, written word by word, cost as much as the products at K = 128).
// The micro-kernel keeps a kMR x kNR = 12 x 32 tile of C in 24 zmm registers (two per row),
// broadcasting each A pair (from a constant offset: the layout is a template argument) and loading
// two B vectors per k-pair.
// Rows of tiles are spread over the OpenMP threads; each element of C is summed by one thread,
// k-pairs in order and k-blocks in order, so the result is the same for any thread count.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <vector>

#include "tapegrad/bf16_operand_cache.h"
#include "tapegrad/bf16_pack.h"
#include "tapegrad/error.h"
#include "tapegrad/gemm_bf16.h"
#include "tapegrad/threads.h"

namespace tapegrad::detail {

#if defined(__x86_64__) && (defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 10))
#define TAPEGRAD_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma,bmi2")))

namespace {

constexpr int kMR = 12, kNR = 32;
constexpr int64_t kKBlock = 512;  // k per block: a B panel (256 pairs x 128 B = 32 KiB) stays in L1
constexpr int64_t kRowWords = kKBlock / 2;  // an A tile's row stride in the rows layout

// The word of pair p, row r in an A tile: rows layout (kRows) or pairs layout.
template <bool kRows>
constexpr int64_t a_word(int64_t p, int r) {
  return kRows ? r * kRowWords + p : p * kMR + r;
}

// C tile (mr x nr at c) = alpha * acc + (first ? beta * C : C).
template <bool kRows>
TAPEGRAD_BF16_TARGET void micro(int64_t kp, const uint32_t* ap, const uint32_t* bp, float* c, int64_t ldc, int mr,
                                int nr, float alpha, float beta, bool first) {
  __m512 acc[kMR][2];
  for (int r = 0; r < kMR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kp; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp + p * kNR);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(bp + p * kNR + 16);
    const uint32_t* a = ap + a_word<kRows>(p, 0);
#pragma GCC unroll 12
    for (int r = 0; r < kMR; ++r) {
      const __m512bh ar = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[a_word<kRows>(0, r)]));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], ar, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], ar, b1);
    }
  }
  const __mmask16 m0 = nr >= 16 ? __mmask16(0xffff) : __mmask16((1u << nr) - 1);
  const __mmask16 m1 = nr >= 32 ? __mmask16(0xffff) : nr > 16 ? __mmask16((1u << (nr - 16)) - 1) : __mmask16(0);
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(first ? beta : 1.f);
  const bool read_c = !first || beta != 0.f;  // beta = 0: C is not read (it may hold NaN)
  for (int r = 0; r < mr; ++r) {
    float* row = c + r * ldc;
    __m512 v0 = _mm512_mul_ps(va, acc[r][0]), v1 = _mm512_mul_ps(va, acc[r][1]);
    if (read_c) {
      v0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, row), v0);
      v1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, row + 16), v1);
    }
    _mm512_mask_storeu_ps(row, m0, v0);
    _mm512_mask_storeu_ps(row + 16, m1, v1);
  }
}

}  // namespace

bool gemm_bf16_avx512_compiled() { return true; }

TAPEGRAD_BF16_TARGET void gemm_bf16_avx512(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha,
                                           const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                                           float* C, int64_t ldc, bool b_constant) {
  if (M == 0 || N == 0) return;
  if (K == 0) {  // C = beta C
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.f ? 0.f : beta * C[i * ldc + j];
    return;
  }
  const PackOperand a{A, lda, ta == Trans::kYes};
  const PackOperand b{B, ldb, tb == Trans::kNo};  // rows of op(B)^T: columns n of op(B)
  const int64_t tiles_m = (M + kMR - 1) / kMR, panels = (N + kNR - 1) / kNR;
  const int threads = num_threads();
  const bool parallel = threads > 1 && !omp_in_parallel() && M * N * K >= int64_t{64} * 64 * 64;
  // B's panels for the k-block at k0 start at word panels * kNR * k0 / 2 (every block before it is
  // a full kKBlock, an even number of k). Packed once for all k-blocks when B holds still and the
  // step has an operand cache (bf16_operand_cache.h), else per k-block here.
  const auto pack_b = [&](uint32_t* out, int64_t k0, int64_t j) {
    const int64_t kc = std::min(kKBlock, K - k0), kp = (kc + 1) / 2;
    pack_pairs_fast(out + j * kp * kNR, kNR, 1, b, j * kNR, std::min<int64_t>(kNR, N - j * kNR), kNR, k0, kc, kp);
  };
  const int64_t k_blocks = (K + kKBlock - 1) / kKBlock;
  Bf16OperandCache* cache = b_constant ? bf16_operand_cache() : nullptr;
  const uint32_t* cached = nullptr;
  if (cache != nullptr) {
    const int64_t words = panels * kNR * ((K + 1) / 2);
    const Bf16OperandKey key{B, ldb, N, K, tb == Trans::kYes, Bf16Form::kAvx512Panels};
    cached = static_cast<const uint32_t*>(cache->get(key, words * 4, k_blocks * panels, [&](void* out, int64_t c) {
      const int64_t kb = c / panels, j = c % panels;
      pack_b(static_cast<uint32_t*>(out) + panels * kNR * (kb * kKBlock / 2), kb * kKBlock, j);
    }));
  }
  thread_local std::vector<uint32_t> b_buf;  // per thread: attention calls this inside its own loop
  for (int64_t k0 = 0; k0 < K; k0 += kKBlock) {
    const int64_t kc = std::min(kKBlock, K - k0), kp = (kc + 1) / 2;
    if (cached == nullptr) b_buf.resize(static_cast<size_t>(panels * kp * kNR));
    uint32_t* packing = cached != nullptr ? nullptr : b_buf.data();  // the caller's buffer: thread_local
    const uint32_t* bp = cached != nullptr ? cached + panels * kNR * (k0 / 2) : packing;
#pragma omp parallel num_threads(threads) if (parallel)
    {
      if (packing != nullptr) {
#pragma omp for schedule(static)
        for (int64_t j = 0; j < panels; ++j) pack_b(packing, k0, j);
      }
      thread_local std::vector<uint32_t> ap;  // grows once per thread: no allocation in a step
      ap.resize(static_cast<size_t>(kMR * kRowWords));
      const bool rows = !a.trans;
#pragma omp for schedule(static)
      for (int64_t t = 0; t < tiles_m; ++t) {
        const int64_t m0 = t * kMR;
        const int mr = static_cast<int>(std::min<int64_t>(kMR, M - m0));
        if (rows) pack_pairs_fast(ap.data(), 1, kRowWords, a, m0, mr, kMR, k0, kc, kp);
        else pack_pairs_fast(ap.data(), kMR, 1, a, m0, mr, kMR, k0, kc, kp);
        for (int64_t j = 0; j < panels; ++j) {
          const int nr = static_cast<int>(std::min<int64_t>(kNR, N - j * kNR));
          float* c = C + m0 * ldc + j * kNR;
          const uint32_t* b_panel = bp + j * kp * kNR;
          if (rows) micro<true>(kp, ap.data(), b_panel, c, ldc, mr, nr, alpha, beta, k0 == 0);
          else micro<false>(kp, ap.data(), b_panel, c, ldc, mr, nr, alpha, beta, k0 == 0);
        }
      }
    }
  }
}

#else

bool gemm_bf16_avx512_compiled() { return false; }
void gemm_bf16_avx512(Trans, Trans, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                      float, float*, int64_t, bool) {
  throw Error("gemm_bf16_avx512: not in this build");
}

#endif

}  // namespace tapegrad::detail
