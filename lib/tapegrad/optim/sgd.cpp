#include "tapegrad/optim/sgd.h"

#include "tapegrad/parallel.h"

namespace tapegrad {

template <typename T>
SGD<T>::SGD(std::vector<Parameter<T>*> params, SGDOptions options, const DecayRule& decays)
    : Optimizer<T>(std::move(params)), options_(options) {
  check(options.momentum >= 0 && options.momentum < 1, "SGD: momentum must be in [0, 1), got ", options.momentum);
  check_finite(options.weight_decay, Bound::kNonNegative, "SGD: weight_decay");
  check_finite(options.peak_lr, Bound::kNonNegative, "SGD: peak_lr");
  for (Parameter<T>* p : this->params_) {
    decay_.push_back(decays(*p));
    buf_.emplace_back(p->shape());
  }
}

template <typename T>
void SGD<T>::step(double lr, double grad_scale) {
  const bool first = this->steps_++ == 0;
  const T mu = static_cast<T>(options_.momentum), a = static_cast<T>(lr), scale = static_cast<T>(grad_scale);
  const bool lr_scaled = options_.decay_mode == WeightDecayMode::kLrScaled;
  const T weight_decay = lr_scaled ? static_cast<T>(options_.weight_decay) : T(0);
  const T independent =
      lr_scaled ? T(0) : static_cast<T>(WeightDecay{options_.weight_decay, options_.decay_mode, options_.peak_lr}.per_step(lr));
  this->for_each_update(4, [&](size_t j, T* const w, const T* const g, int64_t i0, int64_t i1) {
    T* const b = buf_[j].data();  // locals, not captured references: see adamw.cpp
    const T wd = decay_[j] ? weight_decay : T(0), f = decay_[j] ? independent : T(0);
    const T momentum = mu, rate = a, g_scale = scale;
    const bool fresh = first;
    for (int64_t i = i0; i < i1; ++i) {  // vectorized
      const T gi = g_scale * g[i] + wd * w[i];
      b[i] = fresh ? gi : momentum * b[i] + gi;
      w[i] -= rate * b[i] + f * w[i];
    }
  });
}

template <typename T>
std::vector<std::pair<std::string, Tensor<T>*>> SGD<T>::state() {
  std::vector<std::pair<std::string, Tensor<T>*>> s;
  for (size_t k = 0; k < this->params_.size(); ++k) s.emplace_back("momentum." + this->params_[k]->name, &buf_[k]);
  return s;
}

template class SGD<float>;
template class SGD<double>;

}  // namespace tapegrad
