#include "tapegrad/nn/learned_scale.h"

#include <cmath>

#include "tapegrad/ops/scale.h"

namespace tapegrad::nn {

template <typename T>
LearnedScale<T>::LearnedScale(double init) : init_(init) {
  check(std::isfinite(init), "LearnedScale: init must be finite, got ", init);
  scale_ = &this->add_parameter("weight", Tensor<T>(Shape{1}));
  Rng unused;
  reset_parameters(unused);
}

template <typename T>
void LearnedScale<T>::reset_parameters(Rng&) {
  scale_->value().fill(static_cast<T>(init_));
}

template <typename T>
Var<T> LearnedScale<T>::forward(Var<T> x) {
  return scale(x, x.tape().param(*scale_));
}

template <typename T>
std::string LearnedScale<T>::options_repr() const {
  return cat("init=", init_);
}

template class LearnedScale<float>;
template class LearnedScale<double>;

}  // namespace tapegrad::nn
