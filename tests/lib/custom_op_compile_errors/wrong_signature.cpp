// Must not compile: a gradient rule written for the raw interface (din for every input).
#include "tapegrad/custom_op.h"

tapegrad::Var<double> op(tapegrad::Var<double> x) {
  tapegrad::CustomOp<double> o("wrong_signature", {x}, x.shape());
  o.grad(0, [](const double* dy, double* const* din) { din[0][0] += dy[0]; });
  return o.finish();
}
