// Global gradient-norm clipping (torch.nn.utils.clip_grad_norm_):
//   norm = sqrt(sum over all parameters of |g|^2);  if norm > max_norm: g *= max_norm / norm
// Returns the norm before clipping (what a training log wants). NaN/Inf gradients give a
// non-finite norm and are left untouched, so the caller can detect the divergence.
#pragma once

#include <span>
#include <vector>

#include "tapegrad/parameter.h"

namespace tapegrad {

// The global L2 norm of the gradients, accumulated in double in a fixed order.
template <typename T>
double grad_norm(std::span<Parameter<T>* const> params);
// The same, also handing out the sums it adds: squares[k] = |g_k|^2 of params[k] (squares holds
// params.size()), so that per-group norms cost no second pass.
template <typename T>
double grad_norm(std::span<Parameter<T>* const> params, std::span<double> squares);

// max_norm <= 0 disables clipping (the norm is still returned).
template <typename T>
double clip_grad_norm(std::span<Parameter<T>* const> params, double max_norm);

// The same over the vector model.parameters() returns, so the element type is deduced:
// clip_grad_norm(model.parameters(), 1.0).
template <typename T>
double grad_norm(const std::vector<Parameter<T>*>& params) {
  return grad_norm<T>(std::span<Parameter<T>* const>(params));
}
template <typename T>
double clip_grad_norm(const std::vector<Parameter<T>*>& params, double max_norm) {
  return clip_grad_norm<T>(std::span<Parameter<T>* const>(params), max_norm);
}

// The factor clip_grad_norm would scale the gradients by: min(1, max_norm / (norm + 1e-6)); 1
// when clipping is off or the norm is not finite. Pass it to Optimizer::step instead of
// rescaling the gradients in place.
double clip_factor(double norm, double max_norm);

}  // namespace tapegrad
