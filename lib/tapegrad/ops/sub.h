// sub: y = a - b with suffix broadcasting (see broadcast.h).
#pragma once

#include "tapegrad/tape.h"

namespace tapegrad {

template <typename T>
Var<T> sub(Var<T> a, Var<T> b);

template <typename T>
Var<T> operator-(Var<T> a, Var<T> b) {
  return sub(a, b);
}

}  // namespace tapegrad
