// add: y = a + b with suffix broadcasting (see broadcast.h), e.g. x (B,T,C) + bias (C).
#pragma once

#include "tapegrad/tape.h"

namespace tapegrad {

template <typename T>
Var<T> add(Var<T> a, Var<T> b);

template <typename T>
Var<T> operator+(Var<T> a, Var<T> b) {
  return add(a, b);
}

}  // namespace tapegrad
