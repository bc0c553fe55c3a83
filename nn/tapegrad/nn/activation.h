// Activation modules: the pointwise ops as modules, to put in a Sequential (torch.nn.ReLU & co.).
// They hold no parameters; the math and its derivative live with the ops (ops/pointwise.h,
// ops/gelu.h, ops/silu.h).
#pragma once

#include "tapegrad/nn/module.h"
#include "tapegrad/ops/gelu.h"
#include "tapegrad/ops/pointwise.h"
#include "tapegrad/ops/silu.h"

namespace tapegrad::nn {

template <typename T = float>
class ReLU : public UnaryModule<T> {
 public:
  Var<T> forward(Var<T> x) override { return relu(x); }
  std::string type_name() const override { return "ReLU"; }
};

template <typename T = float>
class GELU : public UnaryModule<T> {  // the tanh approximation, as GPT-2
 public:
  Var<T> forward(Var<T> x) override { return gelu(x); }
  std::string type_name() const override { return "GELU"; }
};

template <typename T = float>
class SiLU : public UnaryModule<T> {
 public:
  Var<T> forward(Var<T> x) override { return silu(x); }
  std::string type_name() const override { return "SiLU"; }
};

template <typename T = float>
class Tanh : public UnaryModule<T> {
 public:
  Var<T> forward(Var<T> x) override { return tanh(x); }
  std::string type_name() const override { return "Tanh"; }
};

template <typename T = float>
class Sigmoid : public UnaryModule<T> {
 public:
  Var<T> forward(Var<T> x) override { return sigmoid(x); }
  std::string type_name() const override { return "Sigmoid"; }
};

}  // namespace tapegrad::nn
