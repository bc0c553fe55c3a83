// A binary element-wise op under suffix broadcasting (broadcast.h), from its rule: the value and
// the two partial derivatives at one element,
//   struct Rule {
//     static T f(T a, T b);
//     static T da(T a, T b, T y);  // d y / d a
//     static T db(T a, T b, T y);  // d y / d b
//   };
// Backward: da[i] += dy * Rule::da(..) over the larger operand's elements; for the smaller
// operand, repeated over `rows`, the per-element terms are summed row by row in order for each
// column (parallel over columns: deterministic for any thread count).
#pragma once

#include "tapegrad/ops/broadcast.h"
#include "tapegrad/parallel.h"
#include "tapegrad/tape.h"

namespace tapegrad {

template <typename T, typename Rule>
Var<T> broadcast_op(const char* op, Var<T> a, Var<T> b) {
  check(&a.tape() == &b.tape(), op, ": operands are on different tapes");
  const Broadcast bc = broadcast_suffix(op, a.shape(), b.shape());
  Tape<T>& tape = a.tape();
  Var<T> y = tape.make_output(op, bc.out, {a, b});
  const T *ad = a.data(), *bd = b.data();
  T* yd = y.data();
  const int64_t cols = bc.cols;
  // Element (r, c) of the output reads a and b at these offsets.
  const int64_t a_row = bc.a_is_small ? 0 : cols, b_row = bc.b_is_small ? 0 : cols;
  parallel_for(bc.rows, cols, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < cols; ++c) yd[r * cols + c] = Rule::f(ad[r * a_row + c], bd[r * b_row + c]);
  });
  tape.record(op, {a, b}, y, [bc, ad, bd, yd, a_row, b_row, cols](const T* dy, T* const* din) {
    const int64_t rows = bc.rows;
    const auto term = [&](bool for_a, int64_t r, int64_t c) {
      const int64_t k = r * cols + c;
      const T av = ad[r * a_row + c], bv = bd[r * b_row + c];
      return dy[k] * (for_a ? Rule::da(av, bv, yd[k]) : Rule::db(av, bv, yd[k]));
    };
    for (int side = 0; side < 2; ++side) {
      T* d = din[side];
      if (d == nullptr) continue;
      const bool for_a = side == 0, small = for_a ? bc.a_is_small : bc.b_is_small;
      if (small) {
        parallel_for(cols, rows, [&](int64_t c0, int64_t c1) {
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = c0; c < c1; ++c) d[c] += term(for_a, r, c);
        });
      } else {
        parallel_for(rows, cols, [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r)
            for (int64_t c = 0; c < cols; ++c) d[r * cols + c] += term(for_a, r, c);
        });
      }
    }
  });
  return y;
}

}  // namespace tapegrad
