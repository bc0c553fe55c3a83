// SGD with momentum, as torch.optim.SGD (dampening 0, no Nesterov):
//   g' = g + wd p          (lr-scaled: L2 weight decay through the gradient, where decay applies)
//   buf = mu buf + g'      (buf = g' on the first step)
//   p -= lr buf  (+ f p, with f the independent decay form of optimizer.h, which bypasses g')
#pragma once

#include <functional>

#include "tapegrad/optim/adamw.h"  // decays_if_matrix
#include "tapegrad/optim/optimizer.h"

namespace tapegrad {

struct SGDOptions {
  double momentum = 0.9;
  double weight_decay = 0.0;
  WeightDecayMode decay_mode = WeightDecayMode::kLrScaled;
  double peak_lr = 0;  // the schedule's peak lr, for the independent decay form
};

template <typename T = float>
class SGD : public Optimizer<T> {
 public:
  using DecayRule = std::function<bool(const Parameter<T>&)>;
  SGD(std::vector<Parameter<T>*> params, SGDOptions options = {}, const DecayRule& decays = decays_if_matrix<T>);

  void step(double lr, double grad_scale = 1.0) override;
  std::vector<std::pair<std::string, Tensor<T>*>> state() override;
  // Heavy-ball momentum mu: divergence on a quadratic above (2 + 2 mu) / lr.
  double stability_threshold(double lr) const override { return (2 + 2 * options_.momentum) / lr; }

 private:
  SGDOptions options_;
  std::vector<bool> decay_;
  std::vector<Tensor<T>> buf_;
};

}  // namespace tapegrad
