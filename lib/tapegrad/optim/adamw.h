// AdamW (Loshchilov & Hutter 2019): Adam with decoupled weight decay.
//   m = b1 m + (1 - b1) g              v = b2 v + (1 - b2) g^2
//   m_hat = m / (1 - b1^t)             v_hat = v / (1 - b2^t)
//   p -= lr * (m_hat / (sqrt(v_hat) + eps) + wd * p)     (wd only where decay applies)
// The decay acts on the weights directly, not through the gradient, so it is not rescaled by
// the adaptive denominator. Same update as torch.optim.AdamW.
#pragma once

#include <functional>

#include "tapegrad/optim/optimizer.h"

namespace tapegrad {

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;
};

// Default decay rule: matrices (rank >= 2) decay; biases, norm gains and other vectors do not.
template <typename T>
bool decays_if_matrix(const Parameter<T>& p) {
  return p.value.shape().rank() >= 2;
}

template <typename T>
class AdamW : public Optimizer<T> {
 public:
  using DecayRule = std::function<bool(const Parameter<T>&)>;
  AdamW(std::vector<Parameter<T>*> params, AdamWOptions options = {},
        const DecayRule& decays = decays_if_matrix<T>);

  void step(double lr, double grad_scale = 1.0) override;
  std::vector<std::pair<std::string, Tensor<T>*>> state() override;
  const AdamWOptions& options() const { return options_; }
  bool decays(size_t i) const { return decay_[i]; }

 private:
  AdamWOptions options_;
  std::vector<bool> decay_;
  std::vector<Tensor<T>> m_, v_;
};

}  // namespace tapegrad
