#include "tapegrad/ops/gelu.h"

#include <algorithm>
#include <cmath>

#include "tapegrad/parallel.h"
#include "tapegrad/vmath.h"

namespace tapegrad {

// d gelu / dx, with t = tanh(u):
//   0.5 (1 + t) + 0.5 x (1 - t^2) du/dx,   du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
// Backward keeps x (the op's input) and recomputes t: cheaper than storing it.

namespace {
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kCubic = 0.044715;
}  // namespace

// Both kernels work through blocks of kBlock elements so that tanh runs as one vectorised call
// (vmath.h) over a small stack buffer, with no allocation.
constexpr int64_t kBlock = 256;

template <typename T>
void gelu_forward(T* y, const T* x, int64_t n) {
  parallel_for(n, 20, [&](int64_t begin, int64_t end) {
    T u[kBlock];
    for (int64_t b = begin; b < end; b += kBlock) {
      const int64_t m = std::min(kBlock, end - b);
      const T* xb = x + b;
      for (int64_t i = 0; i < m; ++i) u[i] = T(kSqrt2OverPi) * (xb[i] + T(kCubic) * xb[i] * xb[i] * xb[i]);  // vectorized
      vmath::tanh(u, u, m);
      for (int64_t i = 0; i < m; ++i) y[b + i] = T(0.5) * xb[i] * (T(1) + u[i]);  // vectorized
    }
  });
}

template <typename T>
void gelu_backward(T* dx, const T* x, const T* dy, int64_t n, bool accumulate) {
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
    }
  });
}

template <typename T>
Var<T> gelu(Var<T> x) {
  Tape<T>& tape = x.tape();
  Var<T> y = tape.make_output("gelu", x.shape(), {x});
  const int64_t n = x.shape().numel();
  gelu_forward(y.data(), x.data(), n);
  tape.record("gelu", {x}, y, [xd = x.data(), n](const T* dy, T* const* dx) {
    gelu_backward(dx[0], xd, dy, n);
  });
  return y;
}

template void gelu_forward<float>(float*, const float*, int64_t);
template void gelu_forward<double>(double*, const double*, int64_t);
template void gelu_backward<float>(float*, const float*, const float*, int64_t, bool);
template void gelu_backward<double>(double*, const double*, const double*, int64_t, bool);
template Var<float> gelu(Var<float>);
template Var<double> gelu(Var<double>);

}  // namespace tapegrad
