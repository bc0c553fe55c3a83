// What LayerNorm and RMSNorm share: an element-wise affine map after a per-row normalisation,
//   y[r, c] = gamma[c] * n[r, c] + beta[c],   n[r, c] = (x[r, c] - shift[r]) * scale[r]
// (LayerNorm: shift = mean, scale = rstd; RMSNorm: shift = 0, scale = 1/rms, no beta).
// Its parameter gradients sum over rows:
//   dgamma[c] += sum_r dy[r, c] n[r, c]        dbeta[c] += sum_r dy[r, c]
// n is recomputed from x and the two per-row statistics rather than stored (the (rows, C)
// normalised tensor would cost as much memory as x itself).
//
// The backward kernels visit each row once: the row's dx and its contribution to dgamma/dbeta
// are computed together, the latter into a per-thread partial sum (threads own contiguous rows,
// see parallel_for), and the partials are added in thread order at the end — one pass over dy
// and x instead of two, and bitwise reproducible for a given thread count.
//
// Both visit a thread's rows in groups of kNormRowGroup, one pass over the group per step (the
// row statistics, then what uses them): one row's steps are a chain of dependent reductions
// (sum -> mean -> rstd, say) whose latency a core hides only with other rows' independent work in
// flight. The same arithmetic as row by row, bit for bit, in 0.8-0.9x its time on one batch-split
// worker's 384 rows (bench_kernels *_fwd_bwd/toy).
#pragma once

#include <cstdint>

namespace tapegrad::nn {

inline constexpr int64_t kNormRowGroup = 32;

// Floats of scratch a norm backward needs for rows of width C: per thread, partial dgamma and
// dbeta and two row buffers.
int64_t norm_backward_scratch(int64_t C);

// Adds the per-thread partials into dgamma and dbeta (each skipped if null) in thread order.
template <typename T>
void reduce_norm_partials(T* dgamma, T* dbeta, const T* scratch, int64_t C);

}  // namespace tapegrad::nn
