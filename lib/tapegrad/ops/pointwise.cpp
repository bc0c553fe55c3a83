#include "tapegrad/ops/pointwise.h"

#include <cmath>

#include "tapegrad/parallel.h"
#include "tapegrad/vmath.h"

namespace tapegrad {

// Every function here is one node: forward y = f(x) and backward dx += f'(x) dy, with f'
// written from whichever of x and y is cheaper — both stay in tape memory until clear():
//   neg        y = -x             dx = -dy
//   exp        y = e^x            dx = y dy
//   log        y = ln x           dx = dy / x
//   tanh       y = tanh x         dx = (1 - y^2) dy
//   sigmoid    y = 1 / (1 + e^-x) dx = y (1 - y) dy
//   relu       y = max(x, 0)      dx = [x > 0] dy
//   abs        y = |x|            dx = sign(x) dy   (sign(0) = 0)
//   square     y = x^2            dx = 2 x dy
//   sqrt       y = x^(1/2)        dx = dy / (2 y)
//   pow        y = x^p            dx = p x^(p-1) dy
//   add_scalar y = x + s          dx = dy
// exp, log, tanh and sigmoid run through vmath (vectorised for float, libm for double).

namespace {

// Elements per thread's share that make a parallel region worth its start-up.
constexpr int64_t kWork = 4;

template <typename T, typename Forward, typename Backward>
Var<T> pointwise(const char* op, Var<T> x, Forward forward, Backward backward) {
  Tape<T>& tape = x.tape();
  Var<T> y = tape.make_output(op, x.shape(), {x});
  const int64_t n = x.shape().numel();
  const T* xd = x.data();
  T* yd = y.data();
  parallel_for(n, kWork, [&](int64_t b, int64_t e) { forward(yd + b, xd + b, e - b); });
  tape.record(op, {x}, y, [xd, yd, n, backward](const T* dy, T* const* dx) {
    parallel_for(n, kWork, [&](int64_t b, int64_t e) { backward(dx[0] + b, xd + b, yd + b, dy + b, e - b); });
  });
  return y;
}

}  // namespace

template <typename T>
Var<T> neg(Var<T> x) {
  return pointwise(
      "neg", x, [](T* y, const T* v, int64_t n) { for (int64_t i = 0; i < n; ++i) y[i] = -v[i]; },
      [](T* dx, const T*, const T*, const T* dy, int64_t n) { for (int64_t i = 0; i < n; ++i) dx[i] -= dy[i]; });
}

template <typename T>
Var<T> exp(Var<T> x) {
  return pointwise(
      "exp", x, [](T* y, const T* v, int64_t n) { vmath::exp(y, v, n); },
      [](T* dx, const T*, const T* y, const T* dy, int64_t n) { for (int64_t i = 0; i < n; ++i) dx[i] += y[i] * dy[i]; });
}

template <typename T>
Var<T> log(Var<T> x) {
  return pointwise(
      "log", x, [](T* y, const T* v, int64_t n) { vmath::log(y, v, n); },
      [](T* dx, const T* v, const T*, const T* dy, int64_t n) { for (int64_t i = 0; i < n; ++i) dx[i] += dy[i] / v[i]; });
}

template <typename T>
Var<T> tanh(Var<T> x) {
  return pointwise(
      "tanh", x, [](T* y, const T* v, int64_t n) { vmath::tanh(y, v, n); },
      [](T* dx, const T*, const T* y, const T* dy, int64_t n) {
        for (int64_t i = 0; i < n; ++i) dx[i] += (T(1) - y[i] * y[i]) * dy[i];
      });
}

template <typename T>
Var<T> sigmoid(Var<T> x) {
  return pointwise(
      "sigmoid", x, [](T* y, const T* v, int64_t n) { vmath::sigmoid(y, v, n); },
      [](T* dx, const T*, const T* y, const T* dy, int64_t n) {
        for (int64_t i = 0; i < n; ++i) dx[i] += y[i] * (T(1) - y[i]) * dy[i];
      });
}

template <typename T>
Var<T> relu(Var<T> x) {
  return pointwise(
      "relu", x, [](T* y, const T* v, int64_t n) { for (int64_t i = 0; i < n; ++i) y[i] = v[i] > T(0) ? v[i] : T(0); },
      [](T* dx, const T* v, const T*, const T* dy, int64_t n) {
        for (int64_t i = 0; i < n; ++i) dx[i] += v[i] > T(0) ? dy[i] : T(0);
      });
}

template <typename T>
Var<T> abs(Var<T> x) {
  return pointwise(
      "abs", x, [](T* y, const T* v, int64_t n) { for (int64_t i = 0; i < n; ++i) y[i] = std::abs(v[i]); },
      [](T* dx, const T* v, const T*, const T* dy, int64_t n) {
        for (int64_t i = 0; i < n; ++i) dx[i] += v[i] > T(0) ? dy[i] : v[i] < T(0) ? -dy[i] : T(0);
      });
}

template <typename T>
Var<T> square(Var<T> x) {
  return pointwise(
      "square", x, [](T* y, const T* v, int64_t n) { for (int64_t i = 0; i < n; ++i) y[i] = v[i] * v[i]; },
      [](T* dx, const T* v, const T*, const T* dy, int64_t n) {
        for (int64_t i = 0; i < n; ++i) dx[i] += T(2) * v[i] * dy[i];
      });
}

template <typename T>
Var<T> sqrt(Var<T> x) {
  return pointwise(
      "sqrt", x, [](T* y, const T* v, int64_t n) { for (int64_t i = 0; i < n; ++i) y[i] = std::sqrt(v[i]); },
      [](T* dx, const T*, const T* y, const T* dy, int64_t n) {
        for (int64_t i = 0; i < n; ++i) dx[i] += dy[i] / (T(2) * y[i]);
      });
}

template <typename T>
Var<T> pow(Var<T> x, double p) {
  const T e = static_cast<T>(p);
  return pointwise(
      "pow", x, [e](T* y, const T* v, int64_t n) { for (int64_t i = 0; i < n; ++i) y[i] = std::pow(v[i], e); },
      [e](T* dx, const T* v, const T*, const T* dy, int64_t n) {
        for (int64_t i = 0; i < n; ++i) dx[i] += e * std::pow(v[i], e - T(1)) * dy[i];
      });
}

template <typename T>
Var<T> add_scalar(Var<T> x, double s) {
  const T c = static_cast<T>(s);
  return pointwise(
      "add_scalar", x, [c](T* y, const T* v, int64_t n) { for (int64_t i = 0; i < n; ++i) y[i] = v[i] + c; },
      [](T* dx, const T*, const T*, const T* dy, int64_t n) { for (int64_t i = 0; i < n; ++i) dx[i] += dy[i]; });
}

#define TAPEGRAD_POINTWISE(T)                    \
  template Var<T> neg(Var<T>);                   \
  template Var<T> exp(Var<T>);                   \
  template Var<T> log(Var<T>);                   \
  template Var<T> tanh(Var<T>);                  \
  template Var<T> sigmoid(Var<T>);               \
  template Var<T> relu(Var<T>);                  \
  template Var<T> abs(Var<T>);                   \
  template Var<T> square(Var<T>);                \
  template Var<T> sqrt(Var<T>);                  \
  template Var<T> pow(Var<T>, double);           \
  template Var<T> add_scalar(Var<T>, double);
TAPEGRAD_POINTWISE(float)
TAPEGRAD_POINTWISE(double)
#undef TAPEGRAD_POINTWISE

}  // namespace tapegrad
