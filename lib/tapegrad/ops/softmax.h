// softmax over the last dimension: y_i = exp(x_i - max_j x_j) / sum_j exp(x_j - max_j x_j).
// Subtracting the row max changes nothing mathematically and keeps exp() from overflowing.
#pragma once

#include <cstdint>

#include "tapegrad/tape.h"

namespace tapegrad {

// Kernels over `rows` rows of `cols` elements. Backward accumulates into dx and needs only the
// output y (no copy of x is kept).
template <typename T>
void softmax_forward(T* y, const T* x, int64_t rows, int64_t cols);
template <typename T>
void softmax_backward(T* dx, const T* y, const T* dy, int64_t rows, int64_t cols);

template <typename T>
Var<T> softmax(Var<T> x);

}  // namespace tapegrad
