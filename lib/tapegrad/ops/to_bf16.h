// to_bf16: y = round_bf16(x) (bf16.h) kept in float32 storage — the cast in and out of a bfloat16
// computation, where a float32 graph meets a bf16 one (a norm computed in bf16, nn/norm.h).
// The gradient crosses the same boundary the other way, so it is rounded too: dx += round_bf16(dy)
// (a bf16 implementation's gradient is a bf16 tensor; rounding is identity almost everywhere,
// so this is the straight-through gradient at bf16 precision). Double tapes: the identity
// (gradcheck stays float64).
#pragma once

#include "tapegrad/tape.h"

namespace tapegrad {

template <typename T>
Var<T> to_bf16(Var<T> x);

// round_bf16 of the n values at x, copied into the tape's scratch (alive until the tape is
// cleared): an operand an op's GEMMs read, rounded once by the op (gemm_bf16.h, round_ahead) and
// kept for its backward. Float only (for double it throws, as round_ahead<double> is false).
template <typename T>
const T* rounded_copy(Tape<T>& tape, const T* x, int64_t n);

}  // namespace tapegrad
