#include "tapegrad/tensor_math.h"

#include <cmath>
#include <limits>

#include "tapegrad/error.h"
#include "tapegrad/ops/broadcast.h"

namespace tapegrad {

namespace {
// out[i] = f(a[i], b[i]) with the smaller operand repeated along the leading dims.
template <typename T, typename F>
Tensor<T> zip(const char* op, TensorView<const T> a, TensorView<const T> b, F f) {
  const Broadcast bc = broadcast_suffix(op, a.shape(), b.shape());
  Tensor<T> out(bc.out);
  const int64_t n = bc.out.numel(), cols = bc.cols;
  for (int64_t i = 0; i < n; ++i) {
    const T x = a[bc.a_is_small ? i % cols : i], y = b[bc.b_is_small ? i % cols : i];
    out[i] = f(x, y);
  }
  return out;
}
template <typename T>
T mask(bool holds) {
  return holds ? T(1) : T(0);
}
}  // namespace

template <typename T>
Tensor<T> elementwise(Elementwise op, TensorView<const T> a, TensorView<const T> b) {
  switch (op) {
    case Elementwise::kAdd: return zip("add", a, b, [](T x, T y) { return x + y; });
    case Elementwise::kSub: return zip("sub", a, b, [](T x, T y) { return x - y; });
    case Elementwise::kMul: return zip("mul", a, b, [](T x, T y) { return x * y; });
    case Elementwise::kDiv: return zip("div", a, b, [](T x, T y) { return x / y; });
    case Elementwise::kEq: return zip("eq", a, b, [](T x, T y) { return mask<T>(x == y); });
    case Elementwise::kNe: return zip("ne", a, b, [](T x, T y) { return mask<T>(x != y); });
    case Elementwise::kLt: return zip("lt", a, b, [](T x, T y) { return mask<T>(x < y); });
    case Elementwise::kLe: return zip("le", a, b, [](T x, T y) { return mask<T>(x <= y); });
    case Elementwise::kGt: return zip("gt", a, b, [](T x, T y) { return mask<T>(x > y); });
    case Elementwise::kGe: return zip("ge", a, b, [](T x, T y) { return mask<T>(x >= y); });
  }
  throw Error("elementwise: unknown op");
}

template <typename T>
Tensor<T> affine(TensorView<const T> a, double alpha, double beta) {
  Tensor<T> out(a.shape());
  const T s = static_cast<T>(alpha), t = static_cast<T>(beta);
  for (int64_t i = 0; i < a.numel(); ++i) out[i] = a[i] * s + t;
  return out;
}

template <typename T>
double reduce(Reduction op, TensorView<const T> a) {
  const int64_t n = a.numel();
  if (op == Reduction::kSum || op == Reduction::kMean) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += static_cast<double>(a[i]);
    if (op == Reduction::kSum) return s;
    return n == 0 ? std::numeric_limits<double>::quiet_NaN() : s / static_cast<double>(n);
  }
  const bool is_max = op == Reduction::kMax;
  check(n > 0, is_max ? "max" : "min", " of an empty tensor (shape ", a.shape(), ")");
  double m = static_cast<double>(a[0]);
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(a[i]);
    if (std::isnan(v)) return v;
    if (is_max ? v > m : v < m) m = v;
  }
  return m;
}

template Tensor<float> elementwise(Elementwise, TensorView<const float>, TensorView<const float>);
template Tensor<double> elementwise(Elementwise, TensorView<const double>, TensorView<const double>);
template Tensor<float> affine(TensorView<const float>, double, double);
template Tensor<double> affine(TensorView<const double>, double, double);
template double reduce(Reduction, TensorView<const float>);
template double reduce(Reduction, TensorView<const double>);

}  // namespace tapegrad
