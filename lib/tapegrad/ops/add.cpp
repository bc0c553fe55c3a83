#include "tapegrad/ops/add.h"

#include "tapegrad/ops/broadcast.h"
#include "tapegrad/parallel.h"

namespace tapegrad {

// y[r, c] = big[r, c] + small[c] (or a + b element-wise when the shapes are equal).
//   d big[r, c]  = dy[r, c]
//   d small[c]   = sum_r dy[r, c]     (the small operand was used `rows` times)
// The sum runs over rows in order for every column, so it is deterministic.

template <typename T>
void accumulate(T* dst, const T* src, int64_t n) {
  parallel_for(n, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) dst[i] += src[i];  // vectorized
  });
}

template <typename T>
void bias_backward(T* dbias, const T* dy, int64_t rows, int64_t cols) {
  parallel_for(cols, rows, [&](int64_t c0, int64_t c1) {
    for (int64_t r = 0; r < rows; ++r) {
      const T* s = dy + r * cols;
      for (int64_t c = c0; c < c1; ++c) dbias[c] += s[c];  // vectorized
    }
  });
}

template <typename T>
Var<T> add(Var<T> a, Var<T> b) {
  check(&a.tape() == &b.tape(), "add: operands are on different tapes");
  const Broadcast bc = broadcast_suffix("add", a.shape(), b.shape());
  Tape<T>& tape = a.tape();
  Var<T> y = tape.make_output("add", bc.out, {a, b});
  const T* big = bc.a_is_small ? b.data() : a.data();
  const T* small = bc.a_is_small ? a.data() : b.data();
  const int64_t rows = bc.rows, cols = bc.cols;
  T* out = y.data();
  parallel_for(rows, cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = big[r * cols + c] + small[c];  // vectorized
  });
  tape.record("add", {a, b}, y, [bc](const T* dy, T* const* din) {
    T* dbig = bc.a_is_small ? din[1] : din[0];
    T* dsmall = bc.a_is_small ? din[0] : din[1];
    if (dbig) accumulate(dbig, dy, bc.rows * bc.cols);
    if (dsmall) {
      if (bc.rows == 1) accumulate(dsmall, dy, bc.cols);
      else bias_backward(dsmall, dy, bc.rows, bc.cols);
    }
  });
  return y;
}

template void accumulate<float>(float*, const float*, int64_t);
template void accumulate<double>(double*, const double*, int64_t);
template void bias_backward<float>(float*, const float*, int64_t, int64_t);
template void bias_backward<double>(double*, const double*, int64_t, int64_t);
template Var<float> add(Var<float>, Var<float>);
template Var<double> add(Var<double>, Var<double>);

}  // namespace tapegrad
