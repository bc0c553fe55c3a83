// scale: y = alpha * x for a constant alpha (e.g. the 1/sqrt(HS) of attention scores).
#pragma once

#include "tapegrad/tape.h"

namespace tapegrad {

template <typename T>
Var<T> scale(Var<T> x, double alpha);

template <typename T>
Var<T> operator*(double alpha, Var<T> x) {
  return scale(x, alpha);
}

}  // namespace tapegrad
