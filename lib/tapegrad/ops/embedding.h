// embedding: gathers rows of a table. weight (V, C), ids of shape S (integers in [0, V))
// -> output S + (C), e.g. token ids (B, T) -> (B, T, C).
#pragma once

#include <cstdint>
#include <span>

#include "tapegrad/tape.h"

namespace tapegrad {

// `ids` must stay alive until backward() has run (the tape keeps a pointer, not a copy).
template <typename T>
Var<T> embedding(Var<T> weight, std::span<const int32_t> ids, Shape ids_shape);

}  // namespace tapegrad
