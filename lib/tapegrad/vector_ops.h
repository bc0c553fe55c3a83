// Element-wise kernels over arrays of floats or doubles that every training step runs many times:
// a gradient added into another (the backward of add and of every residual, the tape's seed, the
// data-parallel step's sum of its workers' gradients), a bias's gradient as column sums, a
// broadcast add, the gradient clipping's scaling, and the transpose a GEMM's operand is packed
// with (libxsmm_gemm.cpp). Compiled once per instruction set (isa.h):
// at the baseline's SSE2 width a bias's column sums take 1.7x the time of their AVX-512 copy
// (bench_kernels' bias_backward), and the step's element-wise work decides whether a portable
// build runs at native speed.
//
// Serial: callers split the work over threads (ops/add.cpp, param_grads.cpp). Each element's
// result depends on its own inputs alone, in an order fixed by the sizes (column sums add rows
// in order), so results are bitwise the same wherever the data lies and however the caller
// splits it.
#pragma once

#include <cstdint>

#include "tapegrad/isa.h"

namespace tapegrad {

template <typename T>
struct VectorOpFns {
  // dst[i] += src[i], i < n
  void (*add_into)(T* dst, const T* src, int64_t n);
  // dst[c] += sum_r src[r * ld + c], rows r = 0, 1, ... in turn, for c < cols
  void (*column_sums_into)(T* dst, const T* src, int64_t rows, int64_t cols, int64_t ld);
  // the same sums of round_bf16(src[r * ld + c]) (bf16.h): a bias gradient under bf16, whose dy is
  // bf16 (for double, bf16 being float32 only, the plain sums)
  void (*column_bf16_sums_into)(T* dst, const T* src, int64_t rows, int64_t cols, int64_t ld);
  // out[r * cols + c] = big[r * cols + c] + small[c], r < rows, c < cols
  void (*add_rows)(T* out, const T* big, const T* small, int64_t rows, int64_t cols);
  // x[i] *= factor, i < n
  void (*scale)(T* x, T factor, int64_t n);
  // dst[c * ld_dst + r] = src[r * ld_src + c], r < rows, c < cols: dst (cols x rows) = src^T
  void (*transpose)(T* dst, int64_t ld_dst, const T* src, int64_t ld_src, int64_t rows, int64_t cols);
};
using VectorOpKernels = ByPrecision<VectorOpFns>;
// The kernels of `isa` (active_isa() by default; tests compare every variant).
const VectorOpKernels& vector_ops(Isa isa = active_isa());

}  // namespace tapegrad
