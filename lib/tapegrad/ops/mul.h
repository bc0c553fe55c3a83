// mul: y = a * b element-wise, with suffix broadcasting (see broadcast.h).
#pragma once

#include "tapegrad/tape.h"

namespace tapegrad {

template <typename T>
Var<T> mul(Var<T> a, Var<T> b);

template <typename T>
Var<T> operator*(Var<T> a, Var<T> b) {
  return mul(a, b);
}

}  // namespace tapegrad
