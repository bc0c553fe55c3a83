// LearnedScale: y = s x with one learned scalar s (parameter "weight", shape (1)), initialised to a
// given value. Zhu et al. 2025 put one after the token embedding of their DyT language models,
// initialised to sqrt(dim): without it the embeddings (std 0.02) reach the first tanh far inside
// its linear range and training "struggles to progress".
#pragma once

#include "tapegrad/nn/module.h"

namespace tapegrad::nn {

template <typename T = float>
class LearnedScale : public UnaryModule<T> {
 public:
  explicit LearnedScale(double init);
  void reset_parameters(Rng& rng) override;  // s = init
  // y = s x: ops/scale.h's scale(x, s), whose backward gives dx = s dy and ds = sum x dy.
  Var<T> forward(Var<T> x) override;
  std::string type_name() const override { return "LearnedScale"; }
  std::string options_repr() const override;

 private:
  double init_;
  Parameter<T>* scale_;
};

}  // namespace tapegrad::nn
