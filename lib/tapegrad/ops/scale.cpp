#include "tapegrad/ops/scale.h"

#include "tapegrad/parallel.h"
#include "tapegrad/vmath.h"

namespace tapegrad {

// y = alpha x  =>  dx = alpha dy.

template <typename T>
Var<T> scale(Var<T> x, double alpha) {
  Tape<T>& tape = x.tape();
  Var<T> y = tape.make_output("scale", x.shape(), {x});
  const int64_t n = x.shape().numel();
  const T a = static_cast<T>(alpha);
  const T* xd = x.data();
  T* yd = y.data();
  parallel_for(n, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) yd[i] = a * xd[i];
  });
  tape.record("scale", {x}, y, [a, n](const T* dy, T* const* dx) {
    parallel_for(n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dx[0][i] += a * dy[i];
    });
  });
  return y;
}

// y = s x, s a scalar  =>  dx = s dy,  ds = sum_i x_i dy_i (in a fixed order: vmath::dot).
template <typename T>
Var<T> scale(Var<T> x, Var<T> s) {
  check(s.shape() == Shape{1}, "scale: the scale ", s.shape(), " must be (1) for input ", x.shape());
  Tape<T>& tape = x.tape();
  const OpInputs<T> inputs{x, s};
  Var<T> y = tape.make_output("scale", x.shape(), inputs);
  const int64_t n = x.shape().numel();
  const T* xd = x.data();
  const T* sd = s.data();
  T* yd = y.data();
  parallel_for(n, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) yd[i] = sd[0] * xd[i];
  });
  tape.record("scale", inputs, y, [xd, sd, n](const T* dy, T* const* din) {
    if (T* dx = din[0])
      parallel_for(n, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) dx[i] += sd[0] * dy[i];
      });
    if (T* ds = din[1]) ds[0] += vmath::dot(xd, dy, n);
  });
  return y;
}

template Var<float> scale(Var<float>, double);
template Var<double> scale(Var<double>, double);
template Var<float> scale(Var<float>, Var<float>);
template Var<double> scale(Var<double>, Var<double>);

}  // namespace tapegrad
