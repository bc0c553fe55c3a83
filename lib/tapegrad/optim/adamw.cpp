#include "tapegrad/optim/adamw.h"

#include <cmath>

#include "tapegrad/parallel.h"

namespace tapegrad {

TAPEGRAD_ISA_DISPATCH(AdamWKernels, adamw_kernels)

template <typename T>
AdamW<T>::AdamW(std::vector<Parameter<T>*> params, AdamWOptions options, const DecayRule& decays)
    : Optimizer<T>(std::move(params)), options_(options) {
  check(options.beta1 >= 0 && options.beta1 < 1 && options.beta2 >= 0 && options.beta2 < 1,
        "AdamW: betas must be in [0, 1), got (", options.beta1, ", ", options.beta2, ")");
  check_finite(options.eps, Bound::kPositive, "AdamW: eps");
  check_finite(options.weight_decay, Bound::kNonNegative, "AdamW: weight_decay");
  check_finite(options.peak_lr, Bound::kNonNegative, "AdamW: peak_lr");
  for (Parameter<T>* p : this->params_) {
    decay_.push_back(decays(*p));
    m_.emplace_back(p->shape());
    v_.emplace_back(p->shape());
  }
}

template <typename T>
void AdamW<T>::step(double lr, double grad_scale) {
  update(lr, grad_scale, nullptr);
}

template <typename T>
void AdamW<T>::step_measured(double lr, double grad_scale, std::span<double> squares) {
  update(lr, grad_scale, &squares);
}

template <typename T>
void AdamW<T>::update(double lr, double grad_scale, std::span<double>* squares) {
  const int64_t t = ++this->steps_;
  const double b1 = options_.beta1, b2 = options_.beta2;
  // Folding both bias corrections into the step size and eps saves two divisions per element:
  // m_hat / (sqrt(v_hat) + eps) = (m / c1) / (sqrt(v) / sqrt(c2) + eps)
  //                            = (sqrt(c2) / c1) m / (sqrt(v) + eps sqrt(c2))
  const double c1 = 1 - std::pow(b1, static_cast<double>(t));
  const double c2 = 1 - std::pow(b2, static_cast<double>(t));
  const T step_size = static_cast<T>(lr * std::sqrt(c2) / c1);
  const T eps_hat = static_cast<T>(options_.eps * std::sqrt(c2));
  const T tb1 = static_cast<T>(b1), tb2 = static_cast<T>(b2), scale = static_cast<T>(grad_scale);
  const T decay_rate = static_cast<T>(
      WeightDecay{options_.weight_decay, options_.decay_mode, options_.peak_lr}.per_step(lr));
  const AdamWFns<T>& kernels = adamw_kernels().get<T>();
  if (!squares) {
    const auto kernel = kernels.update;
    this->for_each_update(8, [&](size_t j, T* const w, const T* const g, int64_t i0, int64_t i1) {
      kernel(w + i0, m_[j].data() + i0, v_[j].data() + i0, g + i0, i1 - i0, scale, tb1, tb2, step_size, eps_hat,
             decay_[j] ? decay_rate : T(0));
    });
    return;
  }
  const auto kernel = kernels.update_measured;
  this->for_each_measured_update(8, *squares, [&](size_t j, T* const w, const T* const g, int64_t i0, int64_t i1) {
    return kernel(w + i0, m_[j].data() + i0, v_[j].data() + i0, g + i0, i1 - i0, scale, tb1, tb2, step_size, eps_hat,
                  decay_[j] ? decay_rate : T(0));
  });
}

template <typename T>
std::vector<std::vector<double>> AdamW<T>::preconditioner() const {
  if (this->steps_ == 0) return {};
  const double t = static_cast<double>(this->steps_);
  const double c1 = 1 - std::pow(options_.beta1, t), c2 = 1 - std::pow(options_.beta2, t);
  std::vector<std::vector<double>> p(v_.size());
  for (size_t k = 0; k < v_.size(); ++k) {
    p[k].resize(static_cast<size_t>(v_[k].numel()));
    for (int64_t i = 0; i < v_[k].numel(); ++i)
      p[k][static_cast<size_t>(i)] = c1 * (std::sqrt(static_cast<double>(v_[k][i]) / c2) + options_.eps);
  }
  return p;
}

template <typename T>
double AdamW<T>::stability_threshold(double lr) const {
  return (2 + 2 * options_.beta1) / ((1 - options_.beta1) * lr);
}

template <typename T>
std::vector<std::pair<std::string, Tensor<T>*>> AdamW<T>::state() {
  std::vector<std::pair<std::string, Tensor<T>*>> s;
  for (size_t k = 0; k < this->params_.size(); ++k) {
    s.emplace_back("exp_avg." + this->params_[k]->name, &m_[k]);
    s.emplace_back("exp_avg_sq." + this->params_[k]->name, &v_[k]);
  }
  return s;
}

template class AdamW<float>;
template class AdamW<double>;

}  // namespace tapegrad
