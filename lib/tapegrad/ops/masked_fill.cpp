#include "tapegrad/ops/masked_fill.h"

#include "tapegrad/ops/broadcast.h"
#include "tapegrad/parallel.h"

namespace tapegrad {

// y[r, c] = mask[c] != 0 ? value : x[r, c]  =>  dx[r, c] += mask[c] != 0 ? 0 : dy[r, c]; d mask = 0.

template <typename T>
Var<T> masked_fill(Var<T> x, Var<T> mask, double value) {
  check(&x.tape() == &mask.tape(), "masked_fill: x and mask are on different tapes");
  const Broadcast bc = broadcast_suffix("masked_fill", x.shape(), mask.shape());
  check(!bc.a_is_small, "masked_fill: the mask ", mask.shape(), " must match x ", x.shape(),
        " or its trailing dims, not be larger");
  Tape<T>& tape = x.tape();
  Var<T> y = tape.make_output("masked_fill", x.shape(), {x, mask});
  const T *xd = x.data(), *m = mask.data();
  T* yd = y.data();
  const T fill = static_cast<T>(value);
  const int64_t rows = bc.rows, cols = bc.cols;
  parallel_for(rows, cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < cols; ++c) yd[r * cols + c] = m[c] != T(0) ? fill : xd[r * cols + c];
  });
  tape.record("masked_fill", {x, mask}, y, [m, rows, cols](const T* dy, T* const* din) {
    if (din[0] == nullptr) return;  // only x has a gradient; the mask's is zero
    parallel_for(rows, cols, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = 0; c < cols; ++c)
          if (m[c] == T(0)) din[0][r * cols + c] += dy[r * cols + c];
    });
  });
  return y;
}

template Var<float> masked_fill(Var<float>, Var<float>, double);
template Var<double> masked_fill(Var<double>, Var<double>, double);

}  // namespace tapegrad
