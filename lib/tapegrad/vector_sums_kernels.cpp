// vector_sums.h's kernels, one copy per instruction set (tapegrad/isa.h).
#include "tapegrad/isa_kernel.h"

#include <limits>

#include "tapegrad/vector_sums.h"
#include "tapegrad/vmath.h"

namespace tapegrad::TAPEGRAD_ISA_NS {

namespace {

double sum_squares(const float* x, int64_t n) { return vmath::sum_squares(x, n); }

double sum_squared_diff(const float* a, const float* b, int64_t n) { return vmath::sum_squared_diff(a, b, n); }

void sum_max(const float* x, int64_t n, double* sum, double* max) {
  *sum = vmath::lane_sum<double>(n, [x](int64_t i) { return static_cast<double>(x[i]); });
  // Lanes of running maxima, each as std::max(m, x) = m < x ? x : m: a NaN never replaces m.
  constexpr int kLanes = 16;
  float lane[kLanes];
  for (float& m : lane) m = -std::numeric_limits<float>::infinity();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lane[j] = lane[j] < x[i + j] ? x[i + j] : lane[j];
  for (int j = 0; i < n; ++i, ++j) lane[j] = lane[j] < x[i] ? x[i] : lane[j];
  float m = lane[0];
  for (int j = 1; j < kLanes; ++j) m = m < lane[j] ? lane[j] : m;
  *max = m;
}

}  // namespace

extern const VectorSumFns vector_sums_table{&sum_squares, &sum_squared_diff, &sum_max};

}  // namespace tapegrad::TAPEGRAD_ISA_NS
