// div: y = a / b with suffix broadcasting (see broadcast.h). Division by zero follows IEEE.
#pragma once

#include "tapegrad/tape.h"

namespace tapegrad {

template <typename T>
Var<T> div(Var<T> a, Var<T> b);

template <typename T>
Var<T> operator/(Var<T> a, Var<T> b) {
  return div(a, b);
}

}  // namespace tapegrad
