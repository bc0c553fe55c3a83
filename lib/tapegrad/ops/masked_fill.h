// masked_fill: y = value where mask != 0, x elsewhere. The mask broadcasts as a suffix of x's
// shape (a (T, T) causal mask over (B, NH, T, T)); it receives no gradient (it is piecewise
// constant), and a filled element passes none back to x.
#pragma once

#include "tapegrad/tape.h"

namespace tapegrad {

template <typename T>
Var<T> masked_fill(Var<T> x, Var<T> mask, double value);

}  // namespace tapegrad
