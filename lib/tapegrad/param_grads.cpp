#include "tapegrad/param_grads.h"

#include <algorithm>

#include "tapegrad/error.h"
#include "tapegrad/ops/add.h"

namespace tapegrad {

template <typename T>
ParamGrads<T>::ParamGrads(std::span<Parameter<T>* const> params) {
  for (Parameter<T>* p : params) entries_.push_back({p, Tensor<T>(p->shape())});
  std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.param < b.param; });
  for (size_t i = 1; i < entries_.size(); ++i)
    check(entries_[i].param != entries_[i - 1].param, "ParamGrads: parameter '", entries_[i].param->name,
          "' is listed twice");
}

template <typename T>
TensorView<T> ParamGrads<T>::grad_for(const Parameter<T>& p) {
  const auto it = std::lower_bound(entries_.begin(), entries_.end(), &p,
                                   [](const Entry& e, const Parameter<T>* q) { return e.param < q; });
  check(it != entries_.end() && it->param == &p, "ParamGrads: parameter '", p.name,
        "' has no gradient buffer here (it was not among the parameters this set was made for)");
  return it->grad.view();
}

template <typename T>
void ParamGrads<T>::zero() {
  for (Entry& e : entries_) e.grad.fill(T(0));
}

template <typename T>
void ParamGrads<T>::add_into_params() {
  for (Entry& e : entries_) accumulate(e.param->grad.data(), e.grad.data(), e.grad.numel());
}

template class ParamGrads<float>;
template class ParamGrads<double>;

}  // namespace tapegrad
