// matmul: C = op(A) op(B) over the last two dimensions, batched over the leading ones.
//   op(X) = X, or X transposed in its last two dims when trans_x = Trans::kYes.
//   Shapes after op: A (..., M, K), B (..., K, N) -> C (..., M, N).
//   Batch dims must match, or one side is a plain matrix shared by every batch entry — the
//   common case x (B, T, C) @ W^T (C_out, C) becomes one GEMM with B*T rows.
// Under Autocast (precision.h) the products take bf16 operands, recorded with the op for backward.
#pragma once

#include "tapegrad/gemm.h"
#include "tapegrad/tape.h"

namespace tapegrad {

template <typename T>
Var<T> matmul(Var<T> a, Var<T> b, Trans trans_a = Trans::kNo, Trans trans_b = Trans::kNo);

}  // namespace tapegrad
