#include "tapegrad/ops/dropout.h"

#include <cmath>

#include "tapegrad/parallel.h"

namespace tapegrad {

// y = m * x with m_i = 1/(1-p) kept, 0 dropped  =>  dx = m * dy. The mask, as values, stays in
// tape memory for backward. Drawn serially in index order: the same masks for any thread count.

template <typename T>
Var<T> dropout(Var<T> x, double p, bool training) {
  check(std::isfinite(p) && p >= 0 && p < 1, "dropout: p must be in [0, 1), got ", p);
  if (!training || p == 0) return x;
  Tape<T>& tape = x.tape();
  Var<T> y = tape.make_output("dropout", x.shape(), {x});
  const int64_t n = x.shape().numel();
  T* mask = tape.template scratch<T>(n);
  const T keep = static_cast<T>(1.0 / (1.0 - p));
  Rng& rng = tape.rng();
  for (int64_t i = 0; i < n; ++i) mask[i] = rng.uniform() < p ? T(0) : keep;
  const T* xd = x.data();
  T* yd = y.data();
  parallel_for(n, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) yd[i] = mask[i] * xd[i];
  });
  tape.record("dropout", {x}, y, [mask, n](const T* dy, T* const* dx) {
    parallel_for(n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dx[0][i] += mask[i] * dy[i];
    });
  });
  return y;
}

template Var<float> dropout(Var<float>, double, bool);
template Var<double> dropout(Var<double>, double, bool);

}  // namespace tapegrad
