#include "tapegrad/ops/broadcast.h"

#include "tapegrad/error.h"

namespace tapegrad {

Broadcast broadcast_suffix(const char* op, const Shape& a, const Shape& b) {
  Broadcast r;
  if (a == b) {
    r.out = a;
    r.cols = a.numel();
    return r;
  }
  const bool b_suffix = a.ends_with(b);
  check(b_suffix || b.ends_with(a), op, ": shapes ", a, " and ", b,
        " do not broadcast (one must equal the trailing dims of the other)");
  const Shape& big = b_suffix ? a : b;
  const Shape& small = b_suffix ? b : a;
  r.out = big;
  r.cols = small.numel();
  r.rows = r.cols == 0 ? 0 : big.numel() / r.cols;
  r.a_is_small = !b_suffix;
  r.b_is_small = b_suffix;
  return r;
}

}  // namespace tapegrad
