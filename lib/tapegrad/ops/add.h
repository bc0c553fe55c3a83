// add: y = a + b with suffix broadcasting (see broadcast.h), e.g. x (B,T,C) + bias (C).
#pragma once

#include "tapegrad/tape.h"

namespace tapegrad {

template <typename T>
Var<T> add(Var<T> a, Var<T> b);

// Kernel: dst[i] += src[i] over n elements, split over the threads. The backward of add, and how
// a data-parallel step sums its workers' gradients (param_grads.h).
template <typename T>
void accumulate(T* dst, const T* src, int64_t n);

// Kernel: the backward of a bias broadcast over rows, dbias[c] += sum_r dy[r, c] (or = with
// accumulate false, for a gradient buffer not yet written). Parallel over columns, rows summed in
// order: deterministic. Also used by the fused nn modules; dy_bf16 sums round_bf16 of each dy
// (float only: a bf16 Linear's bias, whose dy the GEMMs read rounded), rounded as it is read.
template <typename T>
void bias_backward(T* dbias, const T* dy, int64_t rows, int64_t cols, bool accumulate = true, bool dy_bf16 = false);

template <typename T>
Var<T> operator+(Var<T> a, Var<T> b) {
  return add(a, b);
}

}  // namespace tapegrad
