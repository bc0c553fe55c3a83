#include "tapegrad/ops/reduce.h"

#include "tapegrad/parallel.h"

namespace tapegrad {

// y = c * sum_i x_i (c = 1 for sum, 1/n for mean)  =>  dx_i = c dy.
// The forward sum runs in index order with a double accumulator: deterministic and accurate for
// float inputs of any length we use.

namespace {

template <typename T>
Var<T> scaled_sum(const char* op, Var<T> x, bool average) {
  Tape<T>& tape = x.tape();
  const int64_t n = x.shape().numel();
  check(n > 0 || !average, op, ": mean of an empty tensor ", x.shape());
  Var<T> y = tape.make_output(op, Shape{}, {x});
  const T* xd = x.data();
  double acc = 0;
  for (int64_t i = 0; i < n; ++i) acc += xd[i];
  const double c = average ? 1.0 / static_cast<double>(n) : 1.0;
  y.data()[0] = static_cast<T>(acc * c);
  tape.record(op, {x}, y, [n, c](const T* dy, T* const* dx) {
    const T g = static_cast<T>(c * dy[0]);
    parallel_for(n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dx[0][i] += g;
    });
  });
  return y;
}

}  // namespace

template <typename T>
Var<T> sum(Var<T> x) {
  return scaled_sum("sum", x, false);
}

template <typename T>
Var<T> mean(Var<T> x) {
  return scaled_sum("mean", x, true);
}

template Var<float> sum(Var<float>);
template Var<double> sum(Var<double>);
template Var<float> mean(Var<float>);
template Var<double> mean(Var<double>);

}  // namespace tapegrad
