#include "tapegrad/ops/silu.h"

#include <algorithm>

#include "tapegrad/parallel.h"
#include "tapegrad/vmath.h"

namespace tapegrad {

// With s = sigmoid(x) and s' = s (1 - s):
//   d silu / dx = s + x s (1 - s) = s (1 + x (1 - s))

// Blocks of kBlock elements: the sigmoid runs as one vectorised call over a stack buffer.
constexpr int64_t kBlock = 256;

template <typename T>
void silu_forward(T* y, const T* x, int64_t n) {
  parallel_for(n, 20, [&](int64_t begin, int64_t end) {
    T s[kBlock];
    for (int64_t b = begin; b < end; b += kBlock) {
      const int64_t m = std::min(kBlock, end - b);
      vmath::sigmoid(s, x + b, m);
      for (int64_t i = 0; i < m; ++i) y[b + i] = x[b + i] * s[i];
    }
  });
}

template <typename T>
void silu_backward(T* dx, const T* x, const T* dy, int64_t n) {
  parallel_for(n, 24, [&](int64_t begin, int64_t end) {
    T s[kBlock];
    for (int64_t b = begin; b < end; b += kBlock) {
      const int64_t m = std::min(kBlock, end - b);
      vmath::sigmoid(s, x + b, m);
      for (int64_t i = 0; i < m; ++i) dx[b + i] += dy[b + i] * s[i] * (T(1) + x[b + i] * (T(1) - s[i]));
    }
  });
}

template <typename T>
Var<T> silu(Var<T> x) {
  Tape<T>& tape = x.tape();
  Var<T> y = tape.make_output("silu", x.shape(), {x});
  const int64_t n = x.shape().numel();
  silu_forward(y.data(), x.data(), n);
  tape.record("silu", {x}, y, [xd = x.data(), n](const T* dy, T* const* dx) {
    silu_backward(dx[0], xd, dy, n);
  });
  return y;
}

template void silu_forward<float>(float*, const float*, int64_t);
template void silu_forward<double>(double*, const double*, int64_t);
template void silu_backward<float>(float*, const float*, const float*, int64_t);
template void silu_backward<double>(double*, const double*, const double*, int64_t);
template Var<float> silu(Var<float>);
template Var<double> silu(Var<double>);

}  // namespace tapegrad
