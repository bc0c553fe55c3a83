// slice: x[..., start:end, ...] along one dimension (negative dim: from the end; start and end
// as Python's, negative counting from the end, clamped to the dimension), a copy.
#pragma once

#include <cstdint>

#include "tapegrad/tape.h"

namespace tapegrad {

template <typename T>
Var<T> slice(Var<T> x, int dim, int64_t start, int64_t end);

}  // namespace tapegrad
