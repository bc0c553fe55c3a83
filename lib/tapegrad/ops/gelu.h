// GELU, tanh approximation (Hendrycks & Gimpel; as GPT-2 and torch's approximate="tanh"):
//   gelu(x) = 0.5 x (1 + tanh(u)),   u = sqrt(2/pi) (x + 0.044715 x^3)
#pragma once

#include <cstdint>

#include "tapegrad/isa.h"
#include "tapegrad/tape.h"

namespace tapegrad {

// Kernels on raw arrays of n elements. Backward accumulates (dx += ...), or with accumulate =
// false writes dx = ...: a fused node's private scratch then needs no zero-fill pass first.
// For a bf16 GEMM that reads the result (float only; gemm_bf16.h, Bf16Operands): forward with
// y_bf16 writes round_bf16(gelu(x)) instead, and backward with dx_bf16 writes each final dx rounded
// — rounded in the pass that computes it, not in a pass of its own.
template <typename T>
void gelu_forward(T* y, const T* x, int64_t n, bool y_bf16 = false);
template <typename T>
void gelu_backward(T* dx, const T* x, const T* dy, int64_t n, bool accumulate = true, bool dx_bf16 = false);

template <typename T>
Var<T> gelu(Var<T> x);

// The two kernels of one instruction set (tapegrad/isa.h); the functions above run the active one's.
template <typename T>
struct GeluFns {
  void (*forward)(T* y, const T* x, int64_t n, bool y_bf16);
  void (*backward)(T* dx, const T* x, const T* dy, int64_t n, bool accumulate, bool dx_bf16);
};
using GeluKernels = ByPrecision<GeluFns>;
const GeluKernels& gelu_kernels(Isa isa = active_isa());

}  // namespace tapegrad
