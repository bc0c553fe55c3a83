// mse_loss: the mean squared error (1/n) sum_i (prediction_i - target_i)^2, a scalar. The target
// may be a constant (data) or need a gradient too.
#pragma once

#include "tapegrad/tape.h"

namespace tapegrad {

template <typename T>
Var<T> mse_loss(Var<T> prediction, Var<T> target);

}  // namespace tapegrad
