// Broadcasting in tapegrad's binary element-wise ops (add, sub, mul, div): numpy's rule. Two
// shapes are aligned at their last dims; each pair of dims must be equal, or one of them 1 (or
// missing), and the output takes the larger. Most pairs are the suffix case — equal shapes, or one
// the trailing dims of the other: a bias (C) against (B, T, C), a mask (T, T) against (B, NH, T, T)
// — which the ops run as rows x columns (Broadcast). The rest — (4, 8) / (4, 1), (2, 1, 3) * (4, 1)
// — go by strides (BroadcastStrides): an operand's stride is 0 along the dims it repeats in.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "tapegrad/shape.h"

namespace tapegrad {

struct Broadcast {
  Shape out;           // the larger shape
  int64_t rows = 1;    // how many times the smaller operand repeats
  int64_t cols = 1;    // elements of the smaller operand
  bool a_is_small = false;
  bool b_is_small = false;
};

// The suffix case, or nothing when the shapes are not one.
std::optional<Broadcast> broadcast_suffix_of(const Shape& a, const Shape& b);
// Throws "<op>: shapes (2,3) and (4) do not broadcast (...)" unless the shapes are the suffix case
// (masked_fill, which takes no other).
Broadcast broadcast_suffix(const char* op, const Shape& a, const Shape& b);

struct BroadcastStrides {
  Shape out;
  int rank = 0;                           // out's rank; the operands are aligned to it
  std::array<int64_t, Shape::kMaxRank> out_stride{}, a_stride{}, b_stride{};  // 0: that operand repeats
  std::array<int64_t, Shape::kMaxRank> a_dims{}, b_dims{};                    // each padded with leading 1s
};
// numpy's rule for any two shapes; throws "<op>: shapes (2,3) and (4) do not broadcast (...)" when
// a pair of dims differs and neither is 1.
BroadcastStrides broadcast_numpy(const char* op, const Shape& a, const Shape& b);
// The offset in an operand of output element k: sum over dims of k's index there times `stride`.
inline int64_t broadcast_offset(const BroadcastStrides& s, int64_t k, const std::array<int64_t, Shape::kMaxRank>& stride) {
  int64_t o = 0;
  for (int d = 0; d < s.rank; ++d) o += (k / s.out_stride[d] % s.out.begin()[d]) * stride[d];
  return o;
}

}  // namespace tapegrad
