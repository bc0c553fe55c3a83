#include "tapegrad/ops/softmax.h"

#include <algorithm>
#include <cmath>

#include "tapegrad/parallel.h"
#include "tapegrad/vmath.h"

namespace tapegrad {

// The Jacobian of one row is dy_i/dx_j = y_i (delta_ij - y_j). Applied to an upstream dy it
// collapses to the "rowsum" form, O(cols) per row instead of O(cols^2):
//   dx_i = sum_j dy_j y_j (delta_ij - y_i) = y_i (dy_i - sum_j dy_j y_j)

template <typename T>
void softmax_forward(T* y, const T* x, int64_t rows, int64_t cols) {
  parallel_for(rows, 4 * cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * cols;
      T* yr = y + r * cols;
      const T inv = T(1) / vmath::exp_shifted_sum(yr, xr, vmath::max(xr, cols), cols);
      for (int64_t j = 0; j < cols; ++j) yr[j] *= inv;
    }
  });
}

template <typename T>
void softmax_backward(T* dx, const T* y, const T* dy, int64_t rows, int64_t cols) {
  parallel_for(rows, 4 * cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* yr = y + r * cols;
      const T* dyr = dy + r * cols;
      T* dxr = dx + r * cols;
      const T dot = vmath::dot(dyr, yr, cols);
      for (int64_t j = 0; j < cols; ++j) dxr[j] += yr[j] * (dyr[j] - dot);
    }
  });
}

template <typename T>
Var<T> softmax(Var<T> x) {
  const Shape s = x.shape();
  check(s.rank() >= 1 && s.last() > 0, "softmax: needs a non-empty last dimension, got shape ", s);
  Tape<T>& tape = x.tape();
  Var<T> y = tape.make_output("softmax", s, {x});
  const int64_t rows = s.rows(), cols = s.last();
  softmax_forward(y.data(), x.data(), rows, cols);
  tape.record("softmax", {x}, y, [yd = y.data(), rows, cols](const T* dy, T* const* dx) {
    softmax_backward(dx[0], yd, dy, rows, cols);
  });
  return y;
}

template void softmax_forward<float>(float*, const float*, int64_t, int64_t);
template void softmax_forward<double>(double*, const double*, int64_t, int64_t);
template void softmax_backward<float>(float*, const float*, const float*, int64_t, int64_t);
template void softmax_backward<double>(double*, const double*, const double*, int64_t, int64_t);
template Var<float> softmax(Var<float>);
template Var<double> softmax(Var<double>);

}  // namespace tapegrad
