// AdamW (Loshchilov & Hutter 2019): Adam with decoupled weight decay.
//   m = b1 m + (1 - b1) g              v = b2 v + (1 - b2) g^2
//   m_hat = m / (1 - b1^t)             v_hat = v / (1 - b2^t)
//   p -= lr * m_hat / (sqrt(v_hat) + eps) + f * p     (f only where decay applies)
// with f = lr * wd (lr-scaled: torch.optim.AdamW's update) or the independent form (optimizer.h).
// The decay acts on the weights directly, not through the gradient, so it is not rescaled by
// the adaptive denominator.
#pragma once

#include <functional>

#include "tapegrad/isa.h"
#include "tapegrad/optim/optimizer.h"

namespace tapegrad {

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;
  WeightDecayMode decay_mode = WeightDecayMode::kLrScaled;
  double peak_lr = 0;  // the schedule's peak lr, for the independent decay form
};

// Default decay rule: matrices (rank >= 2) decay; biases, norm gains and other vectors do not.
template <typename T>
bool decays_if_matrix(const Parameter<T>& p) {
  return p.value().shape().rank() >= 2;
}

// The element loop of one step over a slice of a parameter, in one copy per instruction set
// (isa.h; adamw_kernels.cpp); step() runs the active one's. With bias corrections folded into
// lr_hat and eps (adamw.cpp): g' = g_scale g, m = b1 m + (1 - b1) g', v = b2 v + (1 - b2) g'^2,
// w -= lr_hat m / (sqrt(v) + eps) + decay w.
template <typename T>
struct AdamWFns {
  void (*update)(T* w, T* m, T* v, const T* g, int64_t n, T g_scale, T beta1, T beta2, T lr_hat, T eps, T decay);
  // The same update, returning sum (w_after - w_before)^2 over the slice (Optimizer::step_measured).
  double (*update_measured)(T* w, T* m, T* v, const T* g, int64_t n, T g_scale, T beta1, T beta2, T lr_hat, T eps,
                            T decay);
};
using AdamWKernels = ByPrecision<AdamWFns>;
const AdamWKernels& adamw_kernels(Isa isa = active_isa());

template <typename T = float>
class AdamW : public Optimizer<T> {
 public:
  using DecayRule = std::function<bool(const Parameter<T>&)>;
  AdamW(std::vector<Parameter<T>*> params, AdamWOptions options = {},
        const DecayRule& decays = decays_if_matrix<T>);

  void step(double lr, double grad_scale = 1.0) override;
  // The update's sums of squares taken inside its own pass: no copy of the weights.
  void step_measured(double lr, double grad_scale, std::span<double> squares) override;
  std::vector<std::pair<std::string, Tensor<T>*>> state() override;
  const AdamWOptions& options() const { return options_; }
  // Cohen et al. 2022's preconditioner P = (1 - beta1^t) diag(sqrt(v_hat) + eps), so that the
  // update is lr P^-1 m; on a quadratic, Adam with momentum beta1 diverges when the sharpness of
  // P^-1 H passes (2 + 2 beta1) / ((1 - beta1) lr) — 38 / lr for beta1 = 0.9.
  bool preconditioned() const override { return true; }
  std::vector<std::vector<double>> preconditioner() const override;
  double stability_threshold(double lr) const override;
  bool decays(size_t i) const { return decay_[i]; }

 private:
  // One step; with `squares`, step_measured's (the update_measured kernel).
  void update(double lr, double grad_scale, std::span<double>* squares);

  AdamWOptions options_;
  std::vector<bool> decay_;
  std::vector<Tensor<T>> m_, v_;
};

}  // namespace tapegrad
