// Pointwise functions y = f(x), element by element, of any shape:
//   neg(x)  exp(x)  log(x)  tanh(x)  sigmoid(x)  relu(x)  abs(x)  square(x)  sqrt(x)  pow(x, p)
//   add_scalar(x, s)
// and the operators that make expressions read like math: -x, x + s, s + x, x - s, s - x,
// x * s, x / s, s / x (Var with Var: add.h, mul.h, sub.h, div.h).
// log and sqrt follow IEEE outside their domain (log of a negative number is NaN), as PyTorch.
#pragma once

#include "tapegrad/ops/scale.h"
#include "tapegrad/tape.h"

namespace tapegrad {

template <typename T>
Var<T> neg(Var<T> x);
template <typename T>
Var<T> exp(Var<T> x);
template <typename T>
Var<T> log(Var<T> x);
template <typename T>
Var<T> tanh(Var<T> x);
template <typename T>
Var<T> sigmoid(Var<T> x);
// max(x, 0); its derivative at 0 is taken as 0, as PyTorch does.
template <typename T>
Var<T> relu(Var<T> x);
// |x|; its derivative at 0 is taken as 0 (sign(0) = 0), as PyTorch does.
template <typename T>
Var<T> abs(Var<T> x);
template <typename T>
Var<T> square(Var<T> x);
template <typename T>
Var<T> sqrt(Var<T> x);
// x^p for a constant p.
template <typename T>
Var<T> pow(Var<T> x, double p);
// x + s for a constant s.
template <typename T>
Var<T> add_scalar(Var<T> x, double s);

template <typename T>
Var<T> operator-(Var<T> x) {
  return neg(x);
}
template <typename T>
Var<T> operator+(Var<T> x, double s) {
  return add_scalar(x, s);
}
template <typename T>
Var<T> operator+(double s, Var<T> x) {
  return add_scalar(x, s);
}
template <typename T>
Var<T> operator-(Var<T> x, double s) {
  return add_scalar(x, -s);
}
template <typename T>
Var<T> operator-(double s, Var<T> x) {
  return add_scalar(neg(x), s);
}
template <typename T>
Var<T> operator*(Var<T> x, double s) {
  return scale(x, s);
}
template <typename T>
Var<T> operator/(Var<T> x, double s) {
  return scale(x, 1.0 / s);
}
template <typename T>
Var<T> operator/(double s, Var<T> x) {
  return scale(pow(x, -1.0), s);
}

}  // namespace tapegrad
