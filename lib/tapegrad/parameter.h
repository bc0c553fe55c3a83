// Parameter: a tensor that outlives the tape and wants its gradient — a model weight, or any
// input you differentiate with respect to (gradcheck wraps inputs this way). Its gradient
// accumulates across backward passes (+=) until zero_grad(), as in PyTorch.
#pragma once

#include <string>
#include <utility>

#include "tapegrad/tensor.h"

namespace tapegrad {

template <typename T = float>
struct Parameter {
  std::string name;
  Tensor<T> value;
  Tensor<T> grad;  // same shape as value, zero at construction
  bool requires_grad = true;

  Parameter() = default;
  Parameter(std::string name_, Tensor<T> value_)
      : name(std::move(name_)), value(std::move(value_)), grad(value.shape()) {}

  const Shape& shape() const { return value.shape(); }
  int64_t numel() const { return value.numel(); }
  void zero_grad() { grad.fill(T(0)); }
};

}  // namespace tapegrad
