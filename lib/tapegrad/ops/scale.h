// scale: y = alpha * x for a constant alpha (e.g. the 1/sqrt(HS) of attention scores), or for a
// learned scalar s of shape (1) (e.g. a scale on the embeddings).
#pragma once

#include "tapegrad/tape.h"

namespace tapegrad {

template <typename T>
Var<T> scale(Var<T> x, double alpha);

template <typename T>
Var<T> scale(Var<T> x, Var<T> s);

template <typename T>
Var<T> operator*(double alpha, Var<T> x) {
  return scale(x, alpha);
}

}  // namespace tapegrad
