// Reductions.
//   sum(x), mean(x)                       every element, to a scalar (shape ())
//   sum(x, dim), mean(x, dim), max(x, dim) over one dimension (negative: from the end); with
//                                         keepdim the reduced dimension stays, with size 1
// max passes the gradient to the first maximum along the dimension, as PyTorch's max(dim) does.
#pragma once

#include "tapegrad/tape.h"

namespace tapegrad {

template <typename T>
Var<T> sum(Var<T> x);
template <typename T>
Var<T> mean(Var<T> x);

template <typename T>
Var<T> sum(Var<T> x, int dim, bool keepdim = false);
template <typename T>
Var<T> mean(Var<T> x, int dim, bool keepdim = false);
template <typename T>
Var<T> max(Var<T> x, int dim, bool keepdim = false);

}  // namespace tapegrad
