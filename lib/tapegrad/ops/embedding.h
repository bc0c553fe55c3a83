// embedding: gathers rows of a table. weight (V, C), ids of shape S (integers in [0, V))
// -> output S + (C), e.g. token ids (B, T) -> (B, T, C).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tapegrad/tape.h"

namespace tapegrad {

// `ids` must stay alive until backward() has run (the tape keeps a pointer, not a copy).
template <typename T>
Var<T> embedding(Var<T> weight, std::span<const int32_t> ids, Shape ids_shape);
// A temporary vector of ids would be destroyed before backward() reads it: refused.
template <typename T>
Var<T> embedding(Var<T>, std::vector<int32_t>&&, Shape) {
  static_assert(kept_view_of_temporary<T>,
                "embedding keeps a view of the ids until backward(): a temporary vector dies first; "
                "keep the ids in a variable that outlives backward()");
}

}  // namespace tapegrad
