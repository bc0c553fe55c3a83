#include "tapegrad/ops/scale.h"

#include "tapegrad/parallel.h"

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

template Var<float> scale(Var<float>, double);
template Var<double> scale(Var<double>, double);

}  // namespace tapegrad
