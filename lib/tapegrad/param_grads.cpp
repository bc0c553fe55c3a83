#include "tapegrad/param_grads.h"

#include <algorithm>

#include "tapegrad/error.h"
#include "tapegrad/parallel.h"
#include "tapegrad/vector_ops.h"

namespace tapegrad {

template <typename T>
ParamGrads<T>::ParamGrads(std::span<Parameter<T>* const> params, Storage storage) : storage_(storage) {
  for (Parameter<T>* p : params) {
    Entry e{p, storage == Storage::kPrivate ? Tensor<T>(p->shape()) : Tensor<T>(), nullptr};
    e.data = storage == Storage::kPrivate ? e.buffer.data() : p->grad().data();
    entries_.push_back(std::move(e));
  }
  std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.param < b.param; });
  for (size_t i = 1; i < entries_.size(); ++i)
    check(entries_[i].param != entries_[i - 1].param, "ParamGrads: parameter '", entries_[i].param->name,
          "' is listed twice");
}

template <typename T>
typename ParamGrads<T>::Entry& ParamGrads<T>::find(const Parameter<T>& p) {
  const auto it = std::lower_bound(entries_.begin(), entries_.end(), &p,
                                   [](const Entry& e, const Parameter<T>* q) { return e.param < q; });
  check(it != entries_.end() && it->param == &p, "ParamGrads: parameter '", p.name,
        "' has no gradient buffer here (it was not among the parameters this set was made for)");
  // The parameters' own storage can be replaced (a checkpoint loaded into new tensors): follow it.
  if (storage_ == Storage::kParameters) it->data = it->param->grad().data();
  return *it;
}

template <typename T>
TensorView<T> ParamGrads<T>::grad_for(const Parameter<T>& p) {
  Entry& e = find(p);
  if (e.unwritten) std::fill_n(e.data, p.numel(), T(0)), e.unwritten = false;
  return TensorView<T>(e.data, p.shape());
}

template <typename T>
typename ParamGrads<T>::Lazy ParamGrads<T>::lazy_grad_for(const Parameter<T>& p) {
  Entry& e = find(p);
  return {TensorView<T>(e.data, p.shape()), &e.unwritten};
}

template <typename T>
void ParamGrads<T>::zero() {
  for (Entry& e : entries_) {
    if (storage_ == Storage::kParameters) e.data = e.param->grad().data();
    e.unwritten = true;
  }
}

template <typename T>
void ParamGrads<T>::fill_unwritten() {
  for (Entry& e : entries_)
    if (e.unwritten) {
      T* const g = e.data;
      parallel_for(e.param->numel(), 1, [g](int64_t i0, int64_t i1) { std::fill(g + i0, g + i1, T(0)); });
      e.unwritten = false;
    }
}

template <typename T>
void ParamGrads<T>::add_into_params() {
  check(storage_ == Storage::kPrivate, "ParamGrads::add_into_params: these buffers are the parameters' own gradients");
  const auto add_into = vector_ops().get<T>().add_into;
  // An unwritten buffer is zero: nothing to add (numel 0 skips it).
  parallel_for_arrays(static_cast<int64_t>(entries_.size()),
                      [this](int64_t k) { return entry(k).unwritten ? int64_t{0} : entry(k).buffer.numel(); }, 1,
                      [this, add_into](int64_t k, int64_t i0, int64_t i1) {
                        add_into(entry(k).param->grad().data() + i0, entry(k).buffer.data() + i0, i1 - i0);
                      });
}

template class ParamGrads<float>;
template class ParamGrads<double>;

}  // namespace tapegrad
