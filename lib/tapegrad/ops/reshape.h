// Shape ops (splitting and merging attention heads, among others):
//   reshape(x, {B, T, NH, -1})   same elements, new shape; no copy (one -1 is inferred)
//   transpose(x, 1, 2)           (B, T, NH, HS) -> (B, NH, T, HS); copies into the new layout
//   permute(x, {0, 2, 3, 1})     dim i of the result is dim perm[i] of x; copies
#pragma once

#include <cstdint>
#include <initializer_list>

#include "tapegrad/tape.h"

namespace tapegrad {

template <typename T>
Var<T> reshape(Var<T> x, std::initializer_list<int64_t> dims);
template <typename T>
Var<T> reshape(Var<T> x, Shape shape);
template <typename T>
Var<T> transpose(Var<T> x, int dim0, int dim1);
template <typename T>
Var<T> permute(Var<T> x, std::initializer_list<int> perm);

// Kernel: dst (+)= src with dims d0 and d1 swapped. `shape` is src's shape. With accumulate,
// adds into dst instead of overwriting it (what backward needs).
template <typename T>
void transpose_copy(T* dst, const T* src, const Shape& shape, int d0, int d1, bool accumulate);

}  // namespace tapegrad
