#include "tapegrad/nn/causal_softmax.h"

#include <algorithm>
#include <limits>

#include "tapegrad/error.h"
#include "tapegrad/vmath.h"

namespace tapegrad::nn {

namespace {
void check_shape(const char* op, int64_t rows, int64_t width, int64_t first) {
  check(rows >= 0 && first >= 1 && width >= first + rows - 1, op, ": ", rows, " rows of width ", width,
        " with row i seeing first + i = ", first, " + i entries: needs rows >= 0, first >= 1 and first + rows - 1 <= width");
}
}  // namespace

template <typename T>
T causal_softmax_forward_reference(T* P, int64_t rows, int64_t width, int64_t first) {
  check_shape("causal_softmax_forward", rows, width, first);
  T largest = -std::numeric_limits<T>::infinity();
  for (int64_t i = 0; i < rows; ++i) {
    T* row = P + i * width;
    const int64_t visible = first + i;
    const T mx = vmath::max(row, visible);
    largest = std::max(largest, mx);
    const T inv = T(1) / vmath::exp_shifted_sum(row, row, mx, visible);
    for (int64_t j = 0; j < visible; ++j) row[j] *= inv;
    std::fill(row + visible, row + width, T(0));
  }
  return largest;
}

template <typename T>
void causal_softmax_backward_reference(T* dP, const T* P, int64_t rows, int64_t width, int64_t first) {
  check_shape("causal_softmax_backward", rows, width, first);
  for (int64_t i = 0; i < rows; ++i) {
    const T* p = P + i * width;
    T* g = dP + i * width;
    const int64_t visible = first + i;
    const T dot = vmath::dot(g, p, visible);
    for (int64_t j = 0; j < visible; ++j) g[j] = p[j] * (g[j] - dot);
    std::fill(g + visible, g + width, T(0));
  }
}

float causal_softmax_forward(float* P, int64_t rows, int64_t width, int64_t first) {
  check_shape("causal_softmax_forward", rows, width, first);
  return causal_softmax_kernels().forward(P, rows, width, first);
}
void causal_softmax_backward(float* dP, const float* P, int64_t rows, int64_t width, int64_t first) {
  check_shape("causal_softmax_backward", rows, width, first);
  causal_softmax_kernels().backward(dP, P, rows, width, first);
}

// double: the reference is the path (gradcheck differentiates the exact functions it uses).
double causal_softmax_forward(double* P, int64_t rows, int64_t width, int64_t first) {
  return causal_softmax_forward_reference(P, rows, width, first);
}
void causal_softmax_backward(double* dP, const double* P, int64_t rows, int64_t width, int64_t first) {
  causal_softmax_backward_reference(dP, P, rows, width, first);
}

template float causal_softmax_forward_reference<float>(float*, int64_t, int64_t, int64_t);
template double causal_softmax_forward_reference<double>(double*, int64_t, int64_t, int64_t);
template void causal_softmax_backward_reference<float>(float*, const float*, int64_t, int64_t, int64_t);
template void causal_softmax_backward_reference<double>(double*, const double*, int64_t, int64_t, int64_t);

}  // namespace tapegrad::nn
