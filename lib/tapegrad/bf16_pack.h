// Packing float32 operands into bf16 k-pairs, the layout both bf16 dot-product instructions read
// (vdpbf16ps and AMX's tdpbf16ps): a 32-bit word holds (X(i, k), X(i, k + 1)), the first in its low
// half. Rounded once, here (bf16.h). For the kernels in gemm_bf16_avx512.cpp and gemm_bf16_amx.cpp.
#pragma once

#include <cstdint>

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

}  // namespace tapegrad::detail
