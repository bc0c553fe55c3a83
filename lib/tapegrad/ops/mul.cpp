#include "tapegrad/ops/mul.h"

#include "tapegrad/ops/broadcast_op.h"
#include "tapegrad/parallel.h"

namespace tapegrad {

// y[r, c] = big[r, c] * small[c]:
//   d big[r, c] = dy[r, c] * small[c]
//   d small[c]  = sum_r dy[r, c] * big[r, c]     (summed in row order, per column: deterministic)

namespace {
// The element rule for shapes beyond the suffix case (broadcast_op.h).
template <typename T>
struct MulRule {
  static T f(T a, T b) { return a * b; }
  static T da(T, T b, T) { return b; }
  static T db(T a, T, T) { return a; }
};
}  // namespace

template <typename T>
Var<T> mul(Var<T> a, Var<T> b) {
  check(&a.tape() == &b.tape(), "mul: operands are on different tapes");
  const std::optional<Broadcast> suffix = broadcast_suffix_of(a.shape(), b.shape());
  if (!suffix) return broadcast_general_op<T, MulRule<T>>("mul", a, b);  // numpy's rule beyond the suffix case
  const Broadcast bc = *suffix;
  Tape<T>& tape = a.tape();
  Var<T> y = tape.make_output("mul", bc.out, {a, b});
  const T* big = bc.a_is_small ? b.data() : a.data();
  const T* small = bc.a_is_small ? a.data() : b.data();
  const int64_t cols = bc.cols;
  T* out = y.data();
  parallel_for(bc.rows, cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = big[r * cols + c] * small[c];
  });
  tape.record("mul", {a, b}, y, [bc, big, small, cols](const T* dy, T* const* din) {
    T* dbig = bc.a_is_small ? din[1] : din[0];
    T* dsmall = bc.a_is_small ? din[0] : din[1];
    const int64_t rows = bc.rows;
    if (dbig) {
      parallel_for(rows, cols, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = 0; c < cols; ++c) dbig[r * cols + c] += dy[r * cols + c] * small[c];
      });
    }
    if (dsmall) {
      parallel_for(cols, rows, [&](int64_t c0, int64_t c1) {
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = c0; c < c1; ++c) dsmall[c] += dy[r * cols + c] * big[r * cols + c];
      });
    }
  });
  return y;
}

template Var<float> mul(Var<float>, Var<float>);
template Var<double> mul(Var<double>, Var<double>);

}  // namespace tapegrad
