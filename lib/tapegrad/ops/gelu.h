// GELU, tanh approximation (Hendrycks & Gimpel; as GPT-2 and torch's approximate="tanh"):
//   gelu(x) = 0.5 x (1 + tanh(u)),   u = sqrt(2/pi) (x + 0.044715 x^3)
#pragma once

#include <cstdint>

#include "tapegrad/tape.h"

namespace tapegrad {

// Kernels on raw arrays of n elements. Backward accumulates (dx += ...), or with accumulate =
// false writes dx = ...: a fused node's private scratch then needs no zero-fill pass first.
template <typename T>
void gelu_forward(T* y, const T* x, int64_t n);
template <typename T>
void gelu_backward(T* dx, const T* x, const T* dy, int64_t n, bool accumulate = true);

template <typename T>
Var<T> gelu(Var<T> x);

}  // namespace tapegrad
