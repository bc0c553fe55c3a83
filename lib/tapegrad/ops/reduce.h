// Full reductions to a scalar (shape ()): sum and mean of all elements.
#pragma once

#include "tapegrad/tape.h"

namespace tapegrad {

template <typename T>
Var<T> sum(Var<T> x);
template <typename T>
Var<T> mean(Var<T> x);

}  // namespace tapegrad
