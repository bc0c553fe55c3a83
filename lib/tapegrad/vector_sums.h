// Sums over a parameter's or an activation's worth of floats, accumulated in double: the gradient
// norm clipping reads every step, the lab's per-layer update ratios (lm/instrument.h) and the
// decoder's probes (residual RMS, output-logit mean and max). Compiled once per
// instruction set (isa.h): at the baseline's SSE2 width a double sum takes two lanes per
// instruction, so these ran several times slower than the memory they read allows.
//
// Each sums in an order fixed by n alone (vmath::lane_sum), so results are bitwise the same for
// the same data, variant and n, wherever the data lies.
#pragma once

#include <cstdint>

#include "tapegrad/isa.h"

namespace tapegrad {

struct VectorSumFns {
  // sum x_i^2
  double (*sum_squares)(const float* x, int64_t n);
  // sum (a_i - b_i)^2
  double (*sum_squared_diff)(const float* a, const float* b, int64_t n);
  // sum x_i, and the largest x_i ignoring NaNs (-inf when none), as std::max(max, x_i) in turn
  void (*sum_max)(const float* x, int64_t n, double* sum, double* max);
};
// The kernels of `isa` (active_isa() by default; tests compare every variant).
const VectorSumFns& vector_sums(Isa isa = active_isa());

}  // namespace tapegrad
