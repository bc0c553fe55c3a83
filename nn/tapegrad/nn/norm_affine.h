// The part LayerNorm and RMSNorm share: an element-wise affine map after a per-row normalisation,
//   y[r, c] = gamma[c] * n[r, c] + beta[c],   n[r, c] = (x[r, c] - shift[r]) * scale[r]
// (LayerNorm: shift = mean, scale = rstd; RMSNorm: shift = 0, scale = 1/rms, no beta).
// Its parameter gradients sum over rows:
//   dgamma[c] += sum_r dy[r, c] n[r, c]        dbeta[c] += sum_r dy[r, c]
// n is recomputed from x and the two per-row statistics rather than stored: that is the "cache
// the minimum" rule — the (rows, C) normalised tensor would cost as much memory as x itself.
#pragma once

#include <cstdint>

namespace tapegrad::nn {

// shift may be null (zero); dbeta may be null (no bias). Parallel over columns, rows in order:
// deterministic.
template <typename T>
void norm_affine_backward(T* dgamma, T* dbeta, const T* dy, const T* x, const T* shift, const T* scale,
                          int64_t rows, int64_t C);

}  // namespace tapegrad::nn
