#include "tapegrad/ops/div.h"

#include "tapegrad/ops/broadcast_op.h"

namespace tapegrad {

// y = a / b  =>  da = dy / b,  db = -dy a / b^2 = -dy y / b  (y is kept: no second division
// by b^2, and no extra rounding of a / b).
namespace {
template <typename T>
struct DivRule {
  static T f(T a, T b) { return a / b; }
  static T da(T, T b, T) { return T(1) / b; }
  static T db(T, T b, T y) { return -y / b; }
};
}  // namespace

template <typename T>
Var<T> div(Var<T> a, Var<T> b) {
  return broadcast_op<T, DivRule<T>>("div", a, b);
}

template Var<float> div(Var<float>, Var<float>);
template Var<double> div(Var<double>, Var<double>);

}  // namespace tapegrad
