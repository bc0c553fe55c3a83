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

// round_bf16 over one block just written (bf16.h's integer conversion, so every ISA gives the
// same bits); float only, the double kernels are never asked.
template <typename T>
void round_block(T* out, const T* v, int64_t m) {
  if constexpr (std::is_same_v<T, float>)
    for (int64_t i = 0; i < m; ++i) out[i] = round_bf16(v[i]);  // vectorized
}

template <typename T>
void forward(T* y, const T* x, int64_t n, bool y_bf16) {
  parallel_for(n, 20, [&](int64_t begin, int64_t end) {
    T u[kBlock];
    for (int64_t b = begin; b < end; b += kBlock) {
      const int64_t m = std::min(kBlock, end - b);
      const T* xb = x + b;
      for (int64_t i = 0; i < m; ++i) u[i] = T(kSqrt2OverPi) * (xb[i] + T(kCubic) * xb[i] * xb[i] * xb[i]);  // vectorized
      vmath::tanh(u, u, m);
      for (int64_t i = 0; i < m; ++i) y[b + i] = T(0.5) * xb[i] * (T(1) + u[i]);  // vectorized
      if (y_bf16) round_block(y + b, y + b, m);
    }
  });
}

template <typename T>
void backward(T* dx, const T* x, const T* dy, int64_t n, bool accumulate, T* dx_bf16) {
  parallel_for(n, 24, [&](int64_t begin, int64_t end) {
    T t[kBlock];
    for (int64_t b = begin; b < end; b += kBlock) {
      const int64_t m = std::min(kBlock, end - b);
      const T* xb = x + b;
      for (int64_t i = 0; i < m; ++i) t[i] = T(kSqrt2OverPi) * (xb[i] + T(kCubic) * xb[i] * xb[i] * xb[i]);  // vectorized
      vmath::tanh(t, t, m);
      for (int64_t i = 0; i < m; ++i) {  // vectorized
        const T v = xb[i];
        const T du = T(kSqrt2OverPi) * (T(1) + T(3 * kCubic) * v * v);
        const T g = dy[b + i] * (T(0.5) * (T(1) + t[i]) + T(0.5) * v * (T(1) - t[i] * t[i]) * du);
        dx[b + i] = accumulate ? dx[b + i] + g : g;
      }
      if (dx_bf16) round_block(dx_bf16 + b, dx + b, m);
    }
  });
}

}  // namespace

extern const GeluKernels gelu_kernels_table{{&forward<float>, &backward<float>}, {&forward<double>, &backward<double>}};

}  // namespace tapegrad::TAPEGRAD_ISA_NS
