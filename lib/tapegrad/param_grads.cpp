#include "tapegrad/param_grads.h"

#include <algorithm>

#include "tapegrad/error.h"
#include "tapegrad/parallel.h"
#include "tapegrad/vector_ops.h"

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
  return it->buffer.view();
}

template <typename T>
void ParamGrads<T>::zero() {
  parallel_for_arrays(static_cast<int64_t>(entries_.size()), [this](int64_t k) { return entry(k).buffer.numel(); }, 1,
                      [this](int64_t k, int64_t i0, int64_t i1) {
                        T* const g = entry(k).buffer.data();
                        std::fill(g + i0, g + i1, T(0));
                      });
}

template <typename T>
void ParamGrads<T>::add_into_params() {
  const auto add_into = vector_ops().get<T>().add_into;
  parallel_for_arrays(static_cast<int64_t>(entries_.size()), [this](int64_t k) { return entry(k).buffer.numel(); }, 1,
                      [this, add_into](int64_t k, int64_t i0, int64_t i1) {
                        add_into(entry(k).param->grad().data() + i0, entry(k).buffer.data() + i0, i1 - i0);
                      });
}

template class ParamGrads<float>;
template class ParamGrads<double>;

}  // namespace tapegrad
