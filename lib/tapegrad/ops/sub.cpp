#include "tapegrad/ops/sub.h"

#include "tapegrad/ops/broadcast_op.h"

namespace tapegrad {

// y = a - b  =>  da = dy,  db = -dy  (summed over the repeats of a broadcast operand).
namespace {
template <typename T>
struct SubRule {
  static T f(T a, T b) { return a - b; }
  static T da(T, T, T) { return T(1); }
  static T db(T, T, T) { return T(-1); }
};
}  // namespace

template <typename T>
Var<T> sub(Var<T> a, Var<T> b) {
  return broadcast_op<T, SubRule<T>>("sub", a, b);
}

template Var<float> sub(Var<float>, Var<float>);
template Var<double> sub(Var<double>, Var<double>);

}  // namespace tapegrad
