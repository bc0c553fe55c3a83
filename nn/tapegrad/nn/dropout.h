// Dropout as a module: active while the module is in training mode (module.train()), the
// identity after module.eval() — the flag every module carries, set for a whole tree at once.
// Masks come from the tape's generator (tape.manual_seed for repeatable runs).
#pragma once

#include <string>

#include "tapegrad/error.h"
#include "tapegrad/nn/module.h"
#include "tapegrad/ops/dropout.h"

namespace tapegrad::nn {

template <typename T = float>
class Dropout : public UnaryModule<T> {
 public:
  explicit Dropout(double p = 0.5) : p_(p) {
    check(p >= 0 && p < 1, "Dropout: p must be in [0, 1), got ", p);
  }
  Var<T> forward(Var<T> x) override { return dropout(x, p_, this->is_training()); }
  std::string type_name() const override { return "Dropout"; }
  std::string options_repr() const override { return cat("p=", p_); }
  double p() const { return p_; }

 private:
  double p_;
};

}  // namespace tapegrad::nn
