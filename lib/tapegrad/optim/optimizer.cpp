#include "tapegrad/optim/optimizer.h"

#include <algorithm>
#include <type_traits>

#include "tapegrad/error.h"
#include "tapegrad/vector_sums.h"
#include "tapegrad/vmath.h"

namespace tapegrad {

template <typename T>
void Optimizer<T>::check_measured(std::span<double> squares) const {
  check(squares.size() == params_.size(), "Optimizer::step_measured: ", squares.size(), " sums for ", params_.size(),
        " parameters");
}

template <typename T>
void Optimizer<T>::step_measured(double lr, double grad_scale, std::span<double> squares) {
  check_measured(squares);
  snapshots_.resize(params_.size());
  for (size_t k = 0; k < params_.size(); ++k) {
    const Tensor<T>& w = params_[k]->value();
    if (!(snapshots_[k].shape() == w.shape())) snapshots_[k] = Tensor<T>(w.shape());  // once
    std::copy_n(w.data(), w.numel(), snapshots_[k].data());
  }
  step(lr, grad_scale);
  for (size_t k = 0; k < params_.size(); ++k) {
    const T* const now = params_[k]->value().data();
    const T* const before = snapshots_[k].data();
    const int64_t n = params_[k]->numel();
    if constexpr (std::is_same_v<T, float>) squares[k] = vector_sums().sum_squared_diff(now, before, n);  // at the CPU's width
    else squares[k] = vmath::sum_squared_diff(now, before, n);
  }
}

template class Optimizer<float>;
template class Optimizer<double>;

}  // namespace tapegrad
