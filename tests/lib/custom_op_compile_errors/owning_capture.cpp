// Must not compile: a rule capturing a std::vector (it would be copied into every node and never
// freed); keep forward temporaries with CustomOp::save() and capture the pointer.
#include <vector>

#include "tapegrad/custom_op.h"

tapegrad::Var<double> op(tapegrad::Var<double> x) {
  tapegrad::CustomOp<double> o("owning_capture", {x}, x.shape());
  std::vector<double> cache(static_cast<size_t>(x.shape().numel()), 2.0);
  o.grad(0, [cache](const double* dy, double* dx) { dx[0] = cache[0] * dy[0]; });
  return o.finish();
}
