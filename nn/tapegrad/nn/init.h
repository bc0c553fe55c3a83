// Parameter initialisation. Every module owns its initialisation (Module::reset_parameters, as
// torch's modules do) and runs it when it is constructed, drawing from the default generator — so a
// model built from nn modules never starts at silent zeros. Re-initialise a whole model from a seed
// of your own with model.reset_parameters(rng): modules are visited depth-first in registration
// order, each drawing its tensors in order, so the same seed gives the same model.
//
// Defaults (torch's): Linear weight and bias ~ U(-1/sqrt(in), 1/sqrt(in)); Embedding ~ N(0, 1);
// norms their own constants (LayerNorm gamma 1, beta 0; RMSNorm w 1; ...). GPT-2's scheme is
// options: LinearOptions::init_std etc. (see DecoderConfig::block_options).
#pragma once

#include <cmath>
#include <cstdint>

#include "tapegrad/random.h"
#include "tapegrad/tensor.h"

namespace tapegrad::nn {

// Seeds the default generator (torch.manual_seed). Its initial seed is 0: programs that never
// call this still build the same modules on every run.
void manual_seed(uint64_t seed);
// A generator forked from the default one: one draw under a lock, so modules may be constructed
// from several threads at once (each gets its own stream; which one depends on the order).
Rng default_rng();

namespace init {
// In place, element by element in storage order.
template <typename T>
void normal(Tensor<T>& t, Rng& rng, double std) {
  t = Tensor<T>::randn(t.shape(), rng, std);
}
template <typename T>
void uniform(Tensor<T>& t, Rng& rng, double bound) {
  t = Tensor<T>::uniform(t.shape(), rng, -bound, bound);
}
// A linear map's weight (out, fan_in) and optional bias: std > 0 gives GPT-2's N(0, std^2) weight
// and zero bias; std = 0 torch.nn.Linear's U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for both.
template <typename T>
void linear(Tensor<T>& weight, Tensor<T>* bias, Rng& rng, double std, int64_t fan_in) {
  if (std > 0) {
    normal(weight, rng, std);
    if (bias) bias->fill(T(0));
  } else {
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    uniform(weight, rng, bound);
    if (bias) uniform(*bias, rng, bound);
  }
}
}  // namespace init

}  // namespace tapegrad::nn
