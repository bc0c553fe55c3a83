// dropout (Srivastava et al. 2014, "inverted" as PyTorch): while training, each element is zeroed
// with probability p and the rest are scaled by 1 / (1 - p), so the expected value is unchanged;
// in evaluation it is the identity (the same Var comes back, no node). The mask is drawn from
// the tape's generator (tape.rng()): a seeded tape gives the same masks every run.
#pragma once

#include "tapegrad/tape.h"

namespace tapegrad {

// p in [0, 1); `training` false (or p = 0) returns x itself.
template <typename T>
Var<T> dropout(Var<T> x, double p, bool training = true);

}  // namespace tapegrad
