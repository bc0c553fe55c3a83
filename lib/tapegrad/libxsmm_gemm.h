// The GEMMs libxsmm's generated kernels run faster than OpenBLAS: gemm.cpp's float path tries
// here first. Internal to the core library (gemm.h is the interface).
//
// At a training step's sizes (rows 384–3072, inner dimension 64–4096) a kernel generated for the
// exact shape reaches 90–100 % of a core's FMA peak where OpenBLAS's general kernels reach
// 82–88 % (bench/gemm_ab, bench/RESULTS.md). libxsmm 1.17 generates C = A B and C = A^T B in its
// column-major view, which read row-major are the products with an untransposed second operand:
// every backward dx = dy W and dW = dy^T x. Its kernels block registers only, so libxsmm_sgemm
// cuts B into panels that fit L2 (at most 512 x 256 floats) and calls a kernel per panel, as BLAS
// libraries do after packing; the forward's x W^T (a transposed first operand in that view) runs
// on the same kernels, each panel of W transposed into per-thread scratch first (from M = 64 rows
// on: fewer do not pay for the copy).
//
// Code generation follows the kernel variant (isa.h): avx512 → libxsmm's "skx" target, avx2 →
// "hsw"; under baseline every GEMM stays on OpenBLAS. Only the AVX-512 code wins (the whole step
// 0.59–0.60× at C64–C128, `bench_step --gemm-ab`; the AVX2 code, measured with the backward's
// products only, 1.00–1.10× against OpenBLAS's AVX2 kernels), so gemm.cpp chooses this path by
// default only there. A kernel sums an element's K terms in k order, panels or not, so results
// stay a function of (inputs, variant, thread count).
#pragma once

#include <cstdint>

#include "tapegrad/gemm.h"

namespace tapegrad::detail {

// Whether this build links libxsmm.
bool libxsmm_compiled();

// Whether a product of this kind goes to libxsmm when the path is on: alpha 1, beta 0 or 1, no
// empty dimension, and B not transposed or, transposed, at least 64 rows M to amortise its copy.
bool libxsmm_takes(Trans tb, int64_t M, int64_t N, int64_t K, float alpha, float beta);

// C = op(A) B + beta C (alpha 1) on a generated kernel. Returns false, touching nothing, when the
// build has no libxsmm, the shape is not one libxsmm_takes, or libxsmm generates no kernel for it.
// Thread-safe (libxsmm's registry caches one kernel per shape).
bool libxsmm_sgemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                   const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

}  // namespace tapegrad::detail
