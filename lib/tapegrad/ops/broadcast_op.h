// A binary element-wise op under suffix broadcasting (broadcast.h), from its rule: the value and
// the two partial derivatives at one element,
//   struct Rule {
//     static T f(T a, T b);
//     static T da(T a, T b, T y);  // d y / d a
//     static T db(T a, T b, T y);  // d y / d b
//   };
// Shapes that are not the suffix case go by numpy's rule (broadcast_general_op below).
// Backward: da[i] += dy * Rule::da(..) over the larger operand's elements; for the smaller
// operand, repeated over `rows`, the per-element terms are summed row by row in order for each
// column (parallel over columns: deterministic for any thread count).
#pragma once

#include <new>

#include "tapegrad/ops/broadcast.h"
#include "tapegrad/parallel.h"
#include "tapegrad/tape.h"

namespace tapegrad {

// numpy's rule beyond the suffix case ((4, 8) / (4, 1)), by strides (broadcast.h). Forward: output
// element k, at multi-index i, reads a at sum_d i_d a_stride_d and b likewise. Backward: an
// operand of the output's shape takes dy * d(y)/d(operand) element by element; a repeated one
// sums those terms over the positions it repeats in — for each of its elements (in parallel), the
// output positions that read it, in row-major order: deterministic for any thread count.
template <typename T, typename Rule>
Var<T> broadcast_general_op(const char* op, Var<T> a, Var<T> b) {
  Tape<T>& tape = a.tape();
  // The strides live in the tape's arena (the backward closure holds a pointer; they outlive it).
  BroadcastStrides* sp = new (tape.template scratch<BroadcastStrides>(1)) BroadcastStrides(broadcast_numpy(op, a.shape(), b.shape()));
  const BroadcastStrides& s = *sp;
  Var<T> y = tape.make_output(op, s.out, {a, b});
  const T *ad = a.data(), *bd = b.data();
  T* yd = y.data();
  parallel_for(s.out.numel(), 1, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) yd[k] = Rule::f(ad[broadcast_offset(s, k, s.a_stride)], bd[broadcast_offset(s, k, s.b_stride)]);
  });
  tape.record(op, {a, b}, y, [sp, ad, bd, yd](const T* dy, T* const* din) {
    const BroadcastStrides& st = *sp;
    for (int side = 0; side < 2; ++side) {
      T* d = din[side];
      if (d == nullptr) continue;
      const bool for_a = side == 0;
      const auto& dims = for_a ? st.a_dims : st.b_dims;
      const auto term = [&](int64_t k) {
        const T av = ad[broadcast_offset(st, k, st.a_stride)], bv = bd[broadcast_offset(st, k, st.b_stride)];
        return dy[k] * (for_a ? Rule::da(av, bv, yd[k]) : Rule::db(av, bv, yd[k]));
      };
      // The operand's elements, and for each the output positions that read it: its own index
      // fixes the dims it spans; the dims it repeats in (size 1 there) run over the output's.
      int64_t own = 1, repeats = 1;
      std::array<int64_t, Shape::kMaxRank> own_stride{};
      for (int dim = st.rank - 1; dim >= 0; --dim) own_stride[dim] = own, own *= dims[dim];
      for (int dim = 0; dim < st.rank; ++dim)
        if (dims[dim] == 1) repeats *= st.out.begin()[dim];
      parallel_for(own, repeats, [&](int64_t j0, int64_t j1) {
        for (int64_t j = j0; j < j1; ++j) {
          int64_t base = 0;  // the output offset of (its index, 0 along every repeated dim)
          for (int dim = 0; dim < st.rank; ++dim)
            if (dims[dim] != 1) base += (j / own_stride[dim] % dims[dim]) * st.out_stride[dim];
          T sum = 0;
          for (int64_t r = 0; r < repeats; ++r) {
            int64_t k = base, rest = r;  // r as a row-major index over the repeated dims
            for (int dim = st.rank - 1; dim >= 0; --dim)
              if (dims[dim] == 1) k += (rest % st.out.begin()[dim]) * st.out_stride[dim], rest /= st.out.begin()[dim];
            sum += term(k);
          }
          d[j] += sum;
        }
      });
    }
  });
  return y;
}

template <typename T, typename Rule>
Var<T> broadcast_op(const char* op, Var<T> a, Var<T> b) {
  check(&a.tape() == &b.tape(), op, ": operands are on different tapes");
  const std::optional<Broadcast> suffix = broadcast_suffix_of(a.shape(), b.shape());
  if (!suffix) return broadcast_general_op<T, Rule>(op, a, b);
  const Broadcast bc = *suffix;
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
