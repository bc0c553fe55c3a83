// Parameter: a tensor that outlives the tape and wants its gradient — a model weight, or any
// input you differentiate with respect to (gradcheck wraps inputs this way). Its gradient
// accumulates across backward passes (+=) until zero_grad(), as in PyTorch.
#pragma once

#include <string>
#include <utility>

#include "tapegrad/tensor.h"

namespace tapegrad {

template <typename T = float>
class Parameter {
 public:
  std::string name;
  bool requires_grad = true;  // false: frozen (the tape treats it as a constant)

  Parameter() = default;
  Parameter(std::string name_, Tensor<T> value)
      : name(std::move(name_)), value_(std::move(value)), grad_(value_.shape()) {}

  // The value and d loss / d value, accessed as a Var's value() and grad(). grad has the value's
  // shape, zero at construction.
  Tensor<T>& value() { return value_; }
  const Tensor<T>& value() const { return value_; }
  Tensor<T>& grad() { return grad_; }
  const Tensor<T>& grad() const { return grad_; }

  const Shape& shape() const { return value_.shape(); }
  int64_t numel() const { return value_.numel(); }
  void zero_grad() { grad_.fill(T(0)); }

 private:
  Tensor<T> value_;
  Tensor<T> grad_;
};

}  // namespace tapegrad
