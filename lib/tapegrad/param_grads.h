// ParamGrads: private gradient buffers for a set of parameters, for a tape that must not add into
// the parameters' own .grad() — a data-parallel worker computing its share of a batch beside
// others (lm/batch_parallel.h). With tape.set_param_grads(&g), tape.param(p) accumulates p's
// gradient into g's buffer for p; add_into_params() then sums the buffers into the parameters.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tapegrad/parameter.h"

namespace tapegrad {

template <typename T>
class ParamGrads {
 public:
  ParamGrads() = default;
  explicit ParamGrads(std::span<Parameter<T>* const> params);

  // The buffer for p (shape of p). Throws, naming p, if p is not one of this set's parameters.
  TensorView<T> grad_for(const Parameter<T>& p);
  void zero();
  // p.grad() += this set's gradient of p, for every p; threads split the elements, in a fixed way.
  void add_into_params();

 private:
  struct Entry {
    Parameter<T>* param;
    Tensor<T> buffer;
  };
  Entry& entry(int64_t k) { return entries_[static_cast<size_t>(k)]; }

  std::vector<Entry> entries_;  // sorted by parameter address: a lookup allocates nothing
};

}  // namespace tapegrad
