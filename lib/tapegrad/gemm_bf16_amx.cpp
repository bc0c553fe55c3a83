// The AMX GEMM (gemm_bf16.h): Intel's tile unit, tdpbf16ps C += A B on 16 x 32 bf16 tiles of A
// and 16 k-pair rows x 16 columns of B into a 16 x 16 float32 tile of C — 8,192 multiply-adds per
// instruction, where an AVX-512 FMA does 16.
//
// Both operands are packed as bf16 k-pairs (bf16_pack.h), K padded to a multiple of 32:
//   A, per block of 32 rows:  ap[r * kp + p]           (rows of k-pairs: the A tile's layout)
//   B, per panel of 32 cols:  bp[(p * 32 + c)]         (k-pair rows of 32 columns: two B tiles side by side)
// and each 32 x 32 block of C is four accumulator tiles (tmm0-3), fed by two A tiles (tmm4-5) and
// two B tiles (tmm6-7) per 32 k. Blocks of rows are spread over the OpenMP threads; each element
// of C is summed by one thread, in one order: the same bits for any thread count. tdpbf16ps
// treats bf16 subnormal inputs as zero (as vdpbf16ps): products below 2^-126 are lost, far below
// float32's round-off of any sum they enter.
//
// Linux hands a process the tile registers only when it asks (arch_prctl ARCH_REQ_XCOMP_PERM);
// amx_available asks once. Each thread loads the tile configuration before its first tile op.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <vector>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "tapegrad/bf16_operand_cache.h"
#include "tapegrad/bf16_pack.h"
#include "tapegrad/error.h"
#include "tapegrad/gemm_bf16.h"
#include "tapegrad/threads.h"

namespace tapegrad::detail {

#if defined(__x86_64__) && defined(__linux__) && (defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 11))
#define TAPEGRAD_AMX_TARGET __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,fma")))

namespace {

constexpr int64_t kBlock = 32;  // rows and columns of C per block: 2 x 2 tiles of 16 x 16

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row
  uint8_t rows[16] = {};
};

bool cpu_has_amx_bf16() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  __asm__("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(7), "c"(0));
  return (edx >> 22 & 1) && (edx >> 24 & 1);  // AMX-BF16, AMX-TILE
}

bool request_tiles() {
  constexpr long kReqXcompPerm = 0x1023, kXfeatureTileData = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureTileData) == 0;
}

TAPEGRAD_AMX_TARGET void configure_thread() {
  thread_local bool configured = false;
  if (configured) return;
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) cfg.colsb[t] = 64, cfg.rows[t] = 16;  // every tile 16 rows x 64 bytes
  _tile_loadconfig(&cfg);
  configured = true;
}

// One 32 x 32 block of C (mr x nr of it kept) from packed A rows and a packed B panel. A full
// block with alpha = 1 and beta 0 or 1 (every product matmul asks for) keeps C in the accumulator
// tiles: loaded from C (beta = 1) or zeroed, stored straight back, so no float32 pass over the block
// follows the products — with K = 128 that pass costs as much as the tile work. The sum is then
// C + p_1 + p_2 + ... rather than C + (p_1 + p_2 + ...): another fixed order, still one per element.
TAPEGRAD_AMX_TARGET void block(int64_t kp, const uint32_t* ap, const uint32_t* bp, float* c, int64_t ldc, int64_t mr,
                               int64_t nr, float alpha, float beta) {
  const bool in_place = mr == kBlock && nr == kBlock && alpha == 1.f && (beta == 0.f || beta == 1.f);
  const int64_t c_stride = ldc * 4;
  if (in_place && beta == 1.f) {
    _tile_loadd(0, c, c_stride);
    _tile_loadd(1, c + 16, c_stride);
    _tile_loadd(2, c + 16 * ldc, c_stride);
    _tile_loadd(3, c + 16 * ldc + 16, c_stride);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  const int64_t a_stride = kp * 4, b_stride = kBlock * 4;  // bytes between tile rows
  for (int64_t p = 0; p < kp; p += 16) {
    _tile_loadd(4, ap + p, a_stride);
    _tile_loadd(5, ap + 16 * kp + p, a_stride);
    _tile_loadd(6, bp + p * kBlock, b_stride);
    _tile_loadd(7, bp + p * kBlock + 16, b_stride);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  if (in_place) {
    _tile_stored(0, c, c_stride);
    _tile_stored(1, c + 16, c_stride);
    _tile_stored(2, c + 16 * ldc, c_stride);
    _tile_stored(3, c + 16 * ldc + 16, c_stride);
    return;
  }
  alignas(64) float out[kBlock * kBlock];
  _tile_stored(0, out, kBlock * 4);
  _tile_stored(1, out + 16, kBlock * 4);
  _tile_stored(2, out + 16 * kBlock, kBlock * 4);
  _tile_stored(3, out + 16 * kBlock + 16, kBlock * 4);
  for (int64_t r = 0; r < mr; ++r) {
    float* row = c + r * ldc;
    const float* acc = out + r * kBlock;
    if (beta == 0.f)
      for (int64_t j = 0; j < nr; ++j) row[j] = alpha * acc[j];
    else
      for (int64_t j = 0; j < nr; ++j) row[j] = alpha * acc[j] + beta * row[j];
  }
}

}  // namespace

bool gemm_bf16_amx_available() {
  static const bool ok = cpu_has_amx_bf16() && request_tiles();
  return ok;
}

TAPEGRAD_AMX_TARGET void gemm_bf16_amx(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha,
                                       const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                                       int64_t ldc, bool b_constant) {
  if (M == 0 || N == 0) return;
  const int64_t kp = (K + 31) / 32 * 16;  // k-pairs, K padded to a multiple of 32
  const PackOperand a{A, lda, ta == Trans::kYes};
  const PackOperand b{B, ldb, tb == Trans::kNo};  // rows of op(B)^T: columns n of op(B)
  const int64_t blocks_m = (M + kBlock - 1) / kBlock, panels = (N + kBlock - 1) / kBlock;
  const int threads = num_threads();
  const bool parallel = threads > 1 && !omp_in_parallel() && M * N * K >= int64_t{64} * 64 * 64;
  const auto pack_b = [&](uint32_t* out, int64_t j) {
    pack_pairs_fast(out + j * kp * kBlock, kBlock, 1, b, j * kBlock, std::min(kBlock, N - j * kBlock), kBlock, 0, K, kp);
  };
  const int64_t b_words = panels * kp * kBlock;
  // B packed: from the step's operand cache when B holds still (bf16_operand_cache.h), else here.
  Bf16OperandCache* cache = b_constant ? bf16_operand_cache() : nullptr;
  const uint32_t* cached = nullptr;
  if (cache != nullptr) {
    const Bf16OperandKey key{B, ldb, N, K, tb == Trans::kYes, Bf16Form::kAmxPanels};
    cached = static_cast<const uint32_t*>(
        cache->get(key, b_words * 4, panels, [&](void* out, int64_t j) { pack_b(static_cast<uint32_t*>(out), j); }));
  }
  thread_local std::vector<uint32_t> b_buf;  // per thread: a caller's parallel loop may call this
  if (cached == nullptr) b_buf.resize(static_cast<size_t>(b_words));
  uint32_t* packing = cached != nullptr ? nullptr : b_buf.data();  // the caller's buffer: thread_local
  const uint32_t* bp = cached != nullptr ? cached : packing;
#pragma omp parallel num_threads(threads) if (parallel)
  {
    if (packing != nullptr) {
#pragma omp for schedule(static)
      for (int64_t j = 0; j < panels; ++j) pack_b(packing, j);
    }
    configure_thread();
    thread_local std::vector<uint32_t> ap;  // grows once per thread: no allocation in a step
    ap.resize(static_cast<size_t>(kBlock * kp));
#pragma omp for schedule(static)
    for (int64_t t = 0; t < blocks_m; ++t) {
      const int64_t m0 = t * kBlock, mr = std::min(kBlock, M - m0);
      pack_pairs_fast(ap.data(), 1, kp, a, m0, mr, kBlock, 0, K, kp);
      for (int64_t j = 0; j < panels; ++j)
        block(kp, ap.data(), bp + j * kp * kBlock, C + m0 * ldc + j * kBlock, ldc, mr,
              std::min(kBlock, N - j * kBlock), alpha, beta);
    }
  }
}

#else

bool gemm_bf16_amx_available() { return false; }
void gemm_bf16_amx(Trans, Trans, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t, float,
                   float*, int64_t, bool) {
  throw Error("gemm_bf16_amx: not in this build");
}

#endif

}  // namespace tapegrad::detail
