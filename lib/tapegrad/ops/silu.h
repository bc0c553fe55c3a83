// SiLU (swish): silu(x) = x * sigmoid(x). The gate of SwiGLU.
#pragma once

#include <cmath>
#include <cstdint>

#include "tapegrad/tape.h"

namespace tapegrad {

template <typename T>
void silu_forward(T* y, const T* x, int64_t n);
template <typename T>
void silu_backward(T* dx, const T* x, const T* dy, int64_t n);  // dx += ...

template <typename T>
Var<T> silu(Var<T> x);

// sigmoid(x) = 1 / (1 + e^-x), written so that neither branch overflows.
template <typename T>
inline T sigmoid(T x) {
  if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
  const T e = std::exp(x);
  return e / (T(1) + e);
}

}  // namespace tapegrad
