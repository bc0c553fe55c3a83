// Helpers for module tests: randomise a module's parameters (so a gain of exactly 1 cannot hide
// a missing factor), gradcheck a module with respect to its input and every parameter, and draw a
// random batch of token ids for a language model.
#pragma once

#include "support.h"
#include "tapegrad/nn/module.h"

namespace tapegrad::testing {

template <typename T>
void randomize(nn::Module<T>& m, uint64_t seed, double std = 0.5, double mean = 0.0) {
  Rng rng(seed);
  for (Parameter<T>* p : m.parameters()) p->value() = Tensor<double>::randn(p->shape(), rng, std, mean).template cast<T>();
}

// Rows [begin, begin + n) of a (rows, cols) or (rows) tensor: slices of a fused weight (q, k, v
// of qkv; gate and up of SwiGLU's fc) to build the same computation from primitive ops.
template <typename T>
Tensor<T> rows_of(const Tensor<T>& t, int64_t begin, int64_t n) {
  const int64_t cols = t.shape().rank() == 2 ? t.shape()[1] : 1;
  Shape s = t.shape();
  s[0] = n;
  return Tensor<T>::from(std::span<const T>(t.data() + begin * cols, n * cols), s);
}

// d(module(x)) w.r.t. x and every parameter of the module.
template <typename Forward>
GradcheckResult gradcheck_module(const std::string& name, nn::Module<double>& m, Parameter<double>& x,
                                 Forward forward, GradcheckOptions options = {}) {
  std::vector<Parameter<double>*> params{&x};
  for (Parameter<double>* p : m.parameters()) params.push_back(p);
  return gradcheck(name, [&](Tape<double>& tape) { return forward(tape.param(x)); }, params, options);
}

// n random token ids and targets below V: a language model's batch.
struct TokenBatch {
  std::vector<int32_t> ids, targets;
};
inline TokenBatch random_batch(int64_t n, int64_t V, uint64_t seed) {
  Rng rng(seed);
  TokenBatch b;
  for (int64_t i = 0; i < n; ++i) {
    b.ids.push_back(static_cast<int32_t>(rng.below(V)));
    b.targets.push_back(static_cast<int32_t>(rng.below(V)));
  }
  return b;
}

}  // namespace tapegrad::testing
