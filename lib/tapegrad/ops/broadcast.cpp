#include "tapegrad/ops/broadcast.h"

#include <algorithm>

#include "tapegrad/error.h"

namespace tapegrad {

std::optional<Broadcast> broadcast_suffix_of(const Shape& a, const Shape& b) {
  Broadcast r;
  if (a == b) {
    r.out = a;
    r.cols = a.numel();
    return r;
  }
  const bool b_suffix = a.ends_with(b);
  if (!b_suffix && !b.ends_with(a)) return std::nullopt;
  const Shape& big = b_suffix ? a : b;
  const Shape& small = b_suffix ? b : a;
  r.out = big;
  r.cols = small.numel();
  r.rows = r.cols == 0 ? 0 : big.numel() / r.cols;
  r.a_is_small = !b_suffix;
  r.b_is_small = b_suffix;
  return r;
}

Broadcast broadcast_suffix(const char* op, const Shape& a, const Shape& b) {
  const std::optional<Broadcast> r = broadcast_suffix_of(a, b);
  check(r.has_value(), op, ": shapes ", a, " and ", b, " do not broadcast (one must equal the trailing dims of the other)");
  return *r;
}

BroadcastStrides broadcast_numpy(const char* op, const Shape& a, const Shape& b) {
  BroadcastStrides s;
  s.rank = std::max(a.rank(), b.rank());
  std::array<int64_t, Shape::kMaxRank> out{};
  for (int d = 0; d < s.rank; ++d) {
    // Aligned at the last dims: operand dim d is its dim d - (rank - its rank), or 1 before it.
    const int ia = d - (s.rank - a.rank()), ib = d - (s.rank - b.rank());
    const int64_t da = ia >= 0 ? a.begin()[ia] : 1, db = ib >= 0 ? b.begin()[ib] : 1;
    check(da == db || da == 1 || db == 1, op, ": shapes ", a, " and ", b, " do not broadcast (dim ", d - s.rank,
          " is ", da, " against ", db, "; each pair of trailing dims must be equal or one of them 1, as in numpy)");
    s.a_dims[d] = da, s.b_dims[d] = db;
    out[d] = da == 1 ? db : da;
  }
  s.out = Shape::from_range(out.begin(), out.begin() + s.rank);
  // Row-major strides; an operand repeating along a dim (size 1 there, larger out) strides 0.
  int64_t so = 1, sa = 1, sb = 1;
  for (int d = s.rank - 1; d >= 0; --d) {
    s.out_stride[d] = so, so *= out[d];
    s.a_stride[d] = s.a_dims[d] == 1 ? 0 : sa, sa *= s.a_dims[d];
    s.b_stride[d] = s.b_dims[d] == 1 ? 0 : sb, sb *= s.b_dims[d];
  }
  return s;
}

}  // namespace tapegrad
