// Packing float32 operands into bf16 k-pairs, the layout both bf16 dot-product instructions read
// (vdpbf16ps and AMX's tdpbf16ps): a 32-bit word holds (X(i, k), X(i, k + 1)), the first in its low
// half. Rounded once, here (bf16.h). For the kernels in gemm_bf16_avx512.cpp and gemm_bf16_amx.cpp.
#pragma once

#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "tapegrad/bf16.h"

namespace tapegrad::detail {

inline uint32_t bf16_pair(float lo, float hi) {
  return static_cast<uint32_t>(to_bf16(lo)) | (static_cast<uint32_t>(to_bf16(hi)) << 16);
}

// op(X)(i, k) for X stored row-major with leading dimension ld: X[i][k], or X[k][i] when trans.
struct PackOperand {
  const float* x;
  int64_t ld;
  bool trans;
};

// out[p * sp + r * sr] = bf16_pair(op(X)(i0 + r, k), op(X)(i0 + r, k + 1)), k = k0 + 2p, for
// r < width and p < kp: zero where r >= rows or k >= k0 + kc (rows, k-pairs and an odd k padded).
inline void pack_pairs(uint32_t* out, int64_t sp, int64_t sr, const PackOperand& X, int64_t i0, int64_t rows,
                       int64_t width, int64_t k0, int64_t kc, int64_t kp) {
  const int64_t full = kc / 2;  // pairs with both k inside the block; then an odd k's, then padding
  if (!X.trans && sp == 1) {  // rows of pairs out of rows of X (AMX's A): read and write in order
    for (int64_t r = 0; r < width; ++r) {
      uint32_t* o = out + r * sr;
      if (r >= rows) {
        for (int64_t p = 0; p < kp; ++p) o[p * sp] = 0;
        continue;
      }
      const float* row = X.x + (i0 + r) * X.ld + k0;
      for (int64_t p = 0; p < full; ++p) o[p * sp] = bf16_pair(row[2 * p], row[2 * p + 1]);
      for (int64_t p = full; p < kp; ++p) o[p * sp] = 2 * p < kc ? bf16_pair(row[2 * p], 0.f) : 0u;
    }
    return;
  }
  // Otherwise a k-pair at a time, its words written in order (the panels' layout).
  for (int64_t p = 0; p < kp; ++p) {
    uint32_t* o = out + p * sp;
    const int64_t k = k0 + 2 * p;
    if (p >= full && 2 * p >= kc) {
      for (int64_t r = 0; r < width; ++r) o[r * sr] = 0;
      continue;
    }
    if (!X.trans) {  // a pair from each row of X
      for (int64_t r = 0; r < rows; ++r) {
        const float* row = X.x + (i0 + r) * X.ld + k;
        o[r * sr] = bf16_pair(row[0], p < full ? row[1] : 0.f);
      }
      for (int64_t r = rows; r < width; ++r) o[r * sr] = 0;
      continue;
    }
    const float* lo = X.x + k * X.ld + i0;  // rows of op(X) are columns of X: contiguous
    if (p < full) {
      const float* hi = lo + X.ld;
      for (int64_t r = 0; r < rows; ++r) o[r * sr] = bf16_pair(lo[r], hi[r]);
    } else {
      for (int64_t r = 0; r < rows; ++r) o[r * sr] = bf16_pair(lo[r], 0.f);
    }
    for (int64_t r = rows; r < width; ++r) o[r * sr] = 0;
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#define TAPEGRAD_PACK_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))

// to_bf16 (bf16.h) on 16 lanes: each word's top half is the rounded bf16, the same bits as the scalar.
TAPEGRAD_PACK_TARGET inline __m512i bf16_round16(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  return _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(u, _mm512_set1_epi32(0x00400000)));
}

// v[i] = row i of a 16 x 16 matrix of words -> v[i] = its column i. Within each 128-bit lane, the
// 32- and 64-bit unpacks gather a column's four rows of a 4-row group; the two lane shuffles then
// put the four groups' pieces of each column side by side.
TAPEGRAD_PACK_TARGET inline void transpose16x16_epi32(__m512i v[16]) {
  __m512i t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(v[i], v[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(v[i], v[i + 1]);
  }
  // u[4g + j], j = 0..3: in lane L, column 4L + j of rows 4g..4g+3.
  for (int g = 0; g < 16; g += 4) {
    u[g] = _mm512_unpacklo_epi64(t[g], t[g + 2]);
    u[g + 1] = _mm512_unpackhi_epi64(t[g], t[g + 2]);
    u[g + 2] = _mm512_unpacklo_epi64(t[g + 1], t[g + 3]);
    u[g + 3] = _mm512_unpackhi_epi64(t[g + 1], t[g + 3]);
  }
  for (int j = 0; j < 4; ++j) {
    const __m512i a0 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x88), a1 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xdd);
    const __m512i b0 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x88), b1 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xdd);
    v[j] = _mm512_shuffle_i32x4(a0, b0, 0x88);       // lane 0 of each group: column j
    v[8 + j] = _mm512_shuffle_i32x4(a0, b0, 0xdd);   // lane 2: column 8 + j
    v[4 + j] = _mm512_shuffle_i32x4(a1, b1, 0x88);   // lane 1: column 4 + j
    v[12 + j] = _mm512_shuffle_i32x4(a1, b1, 0xdd);  // lane 3: column 12 + j
  }
}

// 32 floats of a row from k = 2q on (zero past n) -> their 16 pair words.
TAPEGRAD_PACK_TARGET inline void bf16_row_pairs16(uint32_t* out, const float* row, int64_t q, int64_t n) {
  const int64_t k = 2 * q;
  const auto mask = [&](int64_t at) {
    const int64_t left = n - at;
    return left >= 16 ? __mmask16(0xffff) : left <= 0 ? __mmask16(0) : __mmask16((1u << left) - 1);
  };
  const __m512 a = _mm512_maskz_loadu_ps(mask(k), row + k), b = _mm512_maskz_loadu_ps(mask(k + 16), row + k + 16);
  // Word p = low half from lane 2p, high half from lane 2p + 1: the top halves, narrowed.
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_cvtepi32_epi16(_mm512_srli_epi32(bf16_round16(a), 16)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8), _mm512_cvtepi32_epi16(_mm512_srli_epi32(bf16_round16(b), 16)));
}

// pack_pairs with AVX-512 for the layouts the kernels use, the same words: rows of pairs (sp = 1,
// AMX's A) from rows of X, or from columns of X through 16 x 16 transposes; panels of pairs
// (sr = 1) from rows of X through a 16-pair transpose, or from columns of X (two rows of X per
// pair). Anything else: pack_pairs.
TAPEGRAD_PACK_TARGET inline void pack_pairs_fast(uint32_t* out, int64_t sp, int64_t sr, const PackOperand& X, int64_t i0,
                                                 int64_t rows, int64_t width, int64_t k0, int64_t kc, int64_t kp) {
  if (!X.trans && sp == 1) {
    for (int64_t r = 0; r < width; ++r) {
      uint32_t* o = out + r * sr;
      if (r >= rows) {
        for (int64_t p = 0; p < kp; ++p) o[p] = 0;
        continue;
      }
      const float* row = X.x + (i0 + r) * X.ld + k0;
      int64_t p = 0;
      for (; p + 16 <= kp; p += 16) bf16_row_pairs16(o + p, row, p, kc);
      if (p < kp) {
        alignas(64) uint32_t tail[16];
        bf16_row_pairs16(tail, row, p, kc);
        for (int64_t i = 0; p + i < kp; ++i) o[p + i] = tail[i];
      }
    }
    return;
  }
  if (!X.trans && sr == 1 && width <= 32) {
    alignas(64) uint32_t block[32][16];  // [row][pair], then written transposed, 16 rows at a time
    for (int64_t p0 = 0; p0 < kp; p0 += 16) {
      const int64_t np = kp - p0 < 16 ? kp - p0 : 16;
      for (int64_t r = 0; r < width; ++r) {
        if (r < rows) bf16_row_pairs16(block[r], X.x + (i0 + r) * X.ld + k0, p0, kc);
        else for (int64_t i = 0; i < 16; ++i) block[r][i] = 0;
      }
      for (int64_t r0 = 0; r0 < width; r0 += 16) {
        __m512i v[16];
        for (int i = 0; i < 16; ++i) v[i] = r0 + i < width ? _mm512_load_si512(block[r0 + i]) : _mm512_setzero_si512();
        transpose16x16_epi32(v);
        const int64_t n = width - r0 < 16 ? width - r0 : 16;
        const __mmask16 m = n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
        for (int64_t p = 0; p < np; ++p) _mm512_mask_storeu_epi32(out + (p0 + p) * sp + r0, m, v[p]);
      }
    }
    return;
  }
  if (X.trans && sp == 1) {  // AMX's A from columns of X: 16 x 16 blocks of words, transposed
    const int64_t full = kc / 2;
    alignas(64) uint32_t block[16][16];  // [pair][row]
    for (int64_t p0 = 0; p0 < kp; p0 += 16) {
      const int64_t np = kp - p0 < 16 ? kp - p0 : 16;
      for (int64_t r0 = 0; r0 < width; r0 += 16) {
        const int64_t left = rows - r0;
        const __mmask16 m = left >= 16 ? __mmask16(0xffff) : left <= 0 ? __mmask16(0) : __mmask16((1u << left) - 1);
        for (int64_t p = 0; p < np; ++p) {
          const int64_t q = p0 + p;
          const float* lo = X.x + (k0 + 2 * q) * X.ld + i0 + r0;
          const __m512i l = bf16_round16(2 * q < kc ? _mm512_maskz_loadu_ps(m, lo) : _mm512_setzero_ps());
          const __m512i h = bf16_round16(q < full ? _mm512_maskz_loadu_ps(m, lo + X.ld) : _mm512_setzero_ps());
          _mm512_store_si512(block[p], _mm512_or_si512(_mm512_srli_epi32(l, 16),
                                                       _mm512_and_si512(h, _mm512_set1_epi32(int(0xffff0000u)))));
        }
        const int64_t nr = width - r0 < 16 ? width - r0 : 16;
        for (int64_t r = 0; r < nr; ++r)
          for (int64_t p = 0; p < np; ++p) out[(r0 + r) * sr + p0 + p] = block[p][r];
      }
    }
    return;
  }
  if (X.trans && sr == 1) {
    const int64_t full = kc / 2;
    for (int64_t p = 0; p < kp; ++p) {
      uint32_t* o = out + p * sp;
      const bool has_lo = 2 * p < kc, has_hi = p < full;
      const float* lo = X.x + (k0 + 2 * p) * X.ld + i0;
      const float* hi = lo + X.ld;
      for (int64_t r = 0; r < width; r += 16) {
        const int64_t left = rows - r;
        const __mmask16 m = left >= 16 ? __mmask16(0xffff) : left <= 0 ? __mmask16(0) : __mmask16((1u << left) - 1);
        const __m512i l = bf16_round16(has_lo ? _mm512_maskz_loadu_ps(m, lo + r) : _mm512_setzero_ps());
        const __m512i h = bf16_round16(has_hi ? _mm512_maskz_loadu_ps(m, hi + r) : _mm512_setzero_ps());
        const __m512i w = _mm512_or_si512(_mm512_srli_epi32(l, 16), _mm512_and_si512(h, _mm512_set1_epi32(int(0xffff0000u))));
        const int64_t n = width - r < 16 ? width - r : 16;
        _mm512_mask_storeu_epi32(o + r, n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1), w);
      }
    }
    return;
  }
  pack_pairs(out, sp, sr, X, i0, rows, width, k0, kc, kp);
}
#endif

}  // namespace tapegrad::detail
