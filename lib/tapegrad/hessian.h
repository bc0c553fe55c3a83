// Hessian-vector products by central differences of gradients:
//   H v ≈ (∇L(w + ε v) − ∇L(w − ε v)) / 2ε.
// Exact for a quadratic (up to rounding); for a general loss the error is O(ε²) (truncation) plus
// O(u ‖∇L‖ / ε) (rounding, u = 2^-53 in float64). Both balance near ε ≈ u^{1/3} ≈ 6e-6 in units
// of the weights' scale, so the step is ε ‖v‖ = rel_step · (1 + rms(w)), rel_step = 1e-5 by
// default: relative to how large the weights are, independent of how v is scaled.
// Only for float64: in float32 the rounding term alone would be ~1e-2 of ‖∇L‖.
#pragma once

#include <functional>
#include <span>

#include "tapegrad/parameter.h"

namespace tapegrad {

// Writes the loss's gradient at the parameters' current values, flattened in `params` order.
using GradientFn = std::function<void(std::span<double> grad)>;

struct HvpOptions {
  double rel_step = 1e-5;  // ε ‖v‖ = rel_step · (1 + rms(w))
};

// hv = H v, with H the Hessian of the loss behind `gradient` with respect to `params` (flattened
// in order; v and hv have as many elements as all params together). The parameters are moved to
// w ± ε v and restored bitwise afterwards.
void hessian_vector_product(std::span<Parameter<double>* const> params, const GradientFn& gradient,
                            std::span<const double> v, std::span<double> hv, const HvpOptions& options = {});

// The number of elements of all params together.
int64_t flat_size(std::span<Parameter<double>* const> params);

}  // namespace tapegrad
