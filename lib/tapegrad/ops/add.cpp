#include "tapegrad/ops/add.h"

#include <type_traits>

#include "tapegrad/ops/broadcast_op.h"
#include "tapegrad/parallel.h"
#include "tapegrad/vector_ops.h"

namespace tapegrad {

// y[r, c] = big[r, c] + small[c] (or a + b element-wise when the shapes are equal).
//   d big[r, c]  = dy[r, c]
//   d small[c]   = sum_r dy[r, c]     (the small operand was used `rows` times)
// The sum runs over rows in order for every column, so it is deterministic.

// The loops are vector_ops.h's, at the CPU's width.

template <typename T>
void accumulate(T* dst, const T* src, int64_t n) {
  const auto add_into = vector_ops().get<T>().add_into;
  parallel_for(n, 1, [&](int64_t begin, int64_t end) { add_into(dst + begin, src + begin, end - begin); });
}

template <typename T>
void bias_backward(T* dbias, const T* dy, int64_t rows, int64_t cols, bool accumulate, bool dy_bf16) {
  check(!dy_bf16 || std::is_same_v<T, float>, "bias_backward: a bf16 dy is float32 only");
  const VectorOpFns<T>& k = vector_ops().get<T>();
  const auto column_sums_into = dy_bf16 ? k.column_bf16_sums_into : k.column_sums_into;
  parallel_for(cols, rows, [&](int64_t c0, int64_t c1) {
    if (!accumulate) std::fill(dbias + c0, dbias + c1, T(0));  // the same sums as adding onto zeros
    column_sums_into(dbias + c0, dy + c0, rows, c1 - c0, cols);
  });
}

namespace {
// The element rule for shapes beyond the suffix case (broadcast_op.h).
template <typename T>
struct AddRule {
  static T f(T a, T b) { return a + b; }
  static T da(T, T , T) { return T(1); }
  static T db(T , T, T) { return T(1); }
};
}  // namespace

template <typename T>
Var<T> add(Var<T> a, Var<T> b) {
  check(&a.tape() == &b.tape(), "add: operands are on different tapes");
  const std::optional<Broadcast> suffix = broadcast_suffix_of(a.shape(), b.shape());
  if (!suffix) return broadcast_general_op<T, AddRule<T>>("add", a, b);  // numpy's rule beyond the suffix case
  const Broadcast bc = *suffix;
  Tape<T>& tape = a.tape();
  Var<T> y = tape.make_output("add", bc.out, {a, b});
  const T* big = bc.a_is_small ? b.data() : a.data();
  const T* small = bc.a_is_small ? a.data() : b.data();
  const int64_t rows = bc.rows, cols = bc.cols;
  T* out = y.data();
  const auto add_rows = vector_ops().get<T>().add_rows;
  parallel_for(rows, cols, [&](int64_t r0, int64_t r1) {
    add_rows(out + r0 * cols, big + r0 * cols, small, r1 - r0, cols);
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
template void bias_backward<float>(float*, const float*, int64_t, int64_t, bool, bool);
template void bias_backward<double>(double*, const double*, int64_t, int64_t, bool, bool);
template Var<float> add(Var<float>, Var<float>);
template Var<double> add(Var<double>, Var<double>);

}  // namespace tapegrad
