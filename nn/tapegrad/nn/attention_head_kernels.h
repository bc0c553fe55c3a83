// The six products of one causal attention head, written for the shapes a toy model has
// (T of 32-256 positions, heads of 16-64 features), where OpenBLAS loses most of its time:
//
//   forward   S = s q k^T          y = P v
//   backward  dP = dy v^T          dv = P^T dy          dq = s dS k          dk = s dS^T q
//
// (the math is derived in attention.cpp). P and dS are zero above the diagonal, so every product
// either produces only a lower triangle (S, dP) or sums only over one (y, dv, dq, dk): the kernels
// skip the blocks above the diagonal — about half the multiply-adds of the full T x T products the
// GEMM path computes — and they need no packing: a head's q, k, v, dy are read in place (row
// stride 3C or C), k and v transposed once into a small tile for the two "times a transpose"
// products. A measured reason: a C = 64 step (heads of 16) spent a fifth of each worker's time in
// the head GEMMs and their softmax — 64 x 64 x 16 products, each an OpenBLAS call that packs its
// operands for the little work it then does (bench_kernels attention_core times both paths).
//
// Register blocking: R output rows x HS/kW vectors of accumulators (kW floats per vector: 16 with
// AVX-512, 8 with AVX, 4 otherwise — GCC's generic vectors at the register's width), each loaded
// vector reused R times. Every output element is one sum over d (or j) in index order, whatever
// the blocking and the vector width, and no step depends on an address (no peeling), so results
// are bitwise the same run to run.
//
// The GEMM path (attention.cpp's reference) stays: it runs the double path gradcheck
// differentiates, heads whose HS is not a multiple of 16 (or above 64), and it is the reference
// tests/nn/test_attention_head_kernels.cpp holds these kernels to.
#pragma once

#include <cstdint>

#include "tapegrad/isa.h"

namespace tapegrad::nn {

// Each function below runs the active instruction set's copy (tapegrad/isa.h).
// Whether the kernels take heads of HS features: 16, 32, 48 or 64, with the avx2 or avx512
// variant (the baseline's SSE registers are too narrow: there the GEMM path is faster).
bool head_kernels_support(int64_t HS);

// Floats of per-thread scratch the forward needs (the transposed k tile).
int64_t head_forward_scratch(int64_t T, int64_t HS);
// ... and the backward (dP plus the transposed v tile).
int64_t head_backward_scratch(int64_t T, int64_t HS);

// One head, forward: P (T x T, row-major) = softmax(s q k^T + causal mask), y = P v. q, k, v
// rows have stride ld_qkv, y rows ld_y. Returns the largest visible logit.
float head_forward(float* P, float* y, int64_t ld_y, const float* q, const float* k, const float* v, int64_t ld_qkv,
                   int64_t T, int64_t HS, float s, float* scratch);

// One head, backward: overwrites dq, dk, dv (rows of stride ld_qkv) from dy (stride ld_y) and the
// forward's P.
void head_backward(float* dq, float* dk, float* dv, const float* dy, int64_t ld_y, const float* q, const float* k,
                   const float* v, int64_t ld_qkv, const float* P, int64_t T, int64_t HS, float s, float* scratch);

// The six products alone, as the step runs them (no softmax), P standing in for both P and dS:
// what the step's GEMM limit (lm/flops.h) times for a head when the step runs these kernels. Their
// work depends on T and HS only; the results are the products only if P is lower triangular (the
// limit passes any values and discards them).
void head_products(float* S, float* y, float* dP, float* dq, float* dk, float* dv, const float* q, const float* k,
                   const float* v, const float* dy, const float* P, int64_t ld, int64_t T, int64_t HS, float s,
                   float* scratch);

// One instruction set's kernels (the functions above call the active set's).
struct HeadKernels {
  bool (*supports)(int64_t HS);
  int64_t (*forward_scratch)(int64_t T, int64_t HS);
  int64_t (*backward_scratch)(int64_t T, int64_t HS);
  float (*forward)(float* P, float* y, int64_t ld_y, const float* q, const float* k, const float* v, int64_t ld_qkv,
                   int64_t T, int64_t HS, float s, float* scratch);
  void (*backward)(float* dq, float* dk, float* dv, const float* dy, int64_t ld_y, const float* q, const float* k,
                   const float* v, int64_t ld_qkv, const float* P, int64_t T, int64_t HS, float s, float* scratch);
  void (*products)(float* S, float* y, float* dP, float* dq, float* dk, float* dv, const float* q, const float* k,
                   const float* v, const float* dy, const float* P, int64_t ld, int64_t T, int64_t HS, float s,
                   float* scratch);
};
const HeadKernels& head_kernels(Isa isa = active_isa());

}  // namespace tapegrad::nn
