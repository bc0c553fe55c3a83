// GELU's kernels (tanh form), one copy per instruction set (tapegrad/isa.h); gelu.cpp runs the
// active one.
#include "tapegrad/isa_kernel.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "tapegrad/bf16.h"
#include "tapegrad/ops/gelu.h"
#include "tapegrad/parallel.h"
#include "tapegrad/vmath.h"

namespace tapegrad::TAPEGRAD_ISA_NS {

namespace {

// d gelu / dx, with t = tanh(u):
//   0.5 (1 + t) + 0.5 x (1 - t^2) du/dx,   du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
// Backward keeps x (the op's input) and recomputes t: cheaper than storing it.

constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kCubic = 0.044715;

// Both kernels work through blocks of kBlock elements so that tanh runs as one vectorised call
// (vmath.h) over a small stack buffer, with no allocation.
constexpr int64_t kBlock = 256;

// Rounded (float only, for a bf16 GEMM that reads the result): each value goes through round_bf16
// (bf16.h's integer conversion, so every ISA gives the same bits) as it is written, in the pass that
// computes it. The double kernels are never asked.
template <bool Rounded, typename T>
T written(T v) {
  if constexpr (Rounded && std::is_same_v<T, float>) return round_bf16(v);
  return v;
}

template <bool Rounded, typename T>
void forward_block(T* y, const T* x, T* u, int64_t m) {
  for (int64_t i = 0; i < m; ++i) u[i] = T(kSqrt2OverPi) * (x[i] + T(kCubic) * x[i] * x[i] * x[i]);  // vectorized
  vmath::tanh(u, u, m);
  for (int64_t i = 0; i < m; ++i) y[i] = written<Rounded>(T(0.5) * x[i] * (T(1) + u[i]));  // vectorized
}

template <bool Rounded, typename T>
void backward_block(T* dx, const T* x, const T* dy, T* t, int64_t m, bool accumulate) {
  for (int64_t i = 0; i < m; ++i) t[i] = T(kSqrt2OverPi) * (x[i] + T(kCubic) * x[i] * x[i] * x[i]);  // vectorized
  vmath::tanh(t, t, m);
  for (int64_t i = 0; i < m; ++i) {  // vectorized
    const T v = x[i];
    const T du = T(kSqrt2OverPi) * (T(1) + T(3 * kCubic) * v * v);
    const T g = dy[i] * (T(0.5) * (T(1) + t[i]) + T(0.5) * v * (T(1) - t[i] * t[i]) * du);
    dx[i] = written<Rounded>(accumulate ? dx[i] + g : g);
  }
}

template <typename T>
void forward(T* y, const T* x, int64_t n, bool y_bf16) {
  parallel_for(n, 20, [&](int64_t begin, int64_t end) {
    T u[kBlock];
    for (int64_t b = begin; b < end; b += kBlock) {
      const int64_t m = std::min(kBlock, end - b);
      if (y_bf16) forward_block<true>(y + b, x + b, u, m);
      else forward_block<false>(y + b, x + b, u, m);
    }
  });
}

template <typename T>
void backward(T* dx, const T* x, const T* dy, int64_t n, bool accumulate, bool dx_bf16) {
  parallel_for(n, 24, [&](int64_t begin, int64_t end) {
    T t[kBlock];
    for (int64_t b = begin; b < end; b += kBlock) {
      const int64_t m = std::min(kBlock, end - b);
      if (dx_bf16) backward_block<true>(dx + b, x + b, dy + b, t, m, accumulate);
      else backward_block<false>(dx + b, x + b, dy + b, t, m, accumulate);
    }
  });
}

}  // namespace

extern const GeluKernels gelu_kernels_table{{&forward<float>, &backward<float>}, {&forward<double>, &backward<double>}};

}  // namespace tapegrad::TAPEGRAD_ISA_NS
