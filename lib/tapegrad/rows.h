// Row-wise reductions outside the tape, for reading a model's outputs: the rows of a tensor are
// its last dimension (logits (B, T, V) has B*T rows of V), as torch.argmax(x, -1) and
// torch.topk(x, k, -1). Ties go to the lower index; NaN counts as larger than every number (as
// torch's), so a NaN logit is never hidden.
#pragma once

#include <cstdint>
#include <vector>

#include "tapegrad/tensor.h"
#include "tapegrad/tensor_math.h"

namespace tapegrad {

// The index of each row's largest element: shape.rows() entries.
template <typename T>
std::vector<int32_t> argmax_rows(TensorView<const T> x);

// Each row's k largest elements, largest first, and their indices: rows() x k each, row-major.
// Throws, naming k and the row length, unless 1 <= k <= the row length.
template <typename T>
struct TopK {
  std::vector<T> values;
  std::vector<int32_t> indices;
};
template <typename T>
TopK<T> topk_rows(TensorView<const T> x, int64_t k);

// The same on any reading of a tensor: a Tensor, a view, a Var's value().
template <TensorLike V>
std::vector<int32_t> argmax_rows(const V& x) {
  return argmax_rows(read_view(x));
}
template <TensorLike V>
TopK<element_t<V>> topk_rows(const V& x, int64_t k) {
  return topk_rows(read_view(x), k);
}

}  // namespace tapegrad
