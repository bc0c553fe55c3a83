// concat: joins tensors along one dimension (negative: from the end); every other dimension must
// agree. Up to Tape::kMaxInputs tensors per call (nest calls for more).
#pragma once

#include <span>

#include "tapegrad/tape.h"

namespace tapegrad {

template <typename T>
Var<T> concat(std::span<const Var<T>> xs, int dim);
template <typename T>
Var<T> concat(std::initializer_list<Var<T>> xs, int dim) {
  return concat(std::span<const Var<T>>(xs.begin(), xs.size()), dim);
}

}  // namespace tapegrad
