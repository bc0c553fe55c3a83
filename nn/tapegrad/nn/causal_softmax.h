// The row-wise softmax at the centre of causal attention, and its backward, over one head's
// score matrix: `rows` rows of stride `width`, row i seeing its first `first + i` entries (the
// full pass: first = 1, row i sees j <= i; a KV-cache step: first = past + 1).
//
//   forward   P_ij = exp(S_ij - m_i) / sum_{k visible} exp(S_ik - m_i),  m_i = max_{k visible} S_ik
//   backward  dS_ij = P_ij (dP_ij - sum_{k visible} dP_ik P_ik)
// (derived in attention.cpp); entries past the visible prefix are set to 0 in both.
//
// Two implementations with one contract:
// - the reference: plain loops per row, the code to read, and the double path gradcheck differentiates;
// - float: Eigen's native packets in three passes over the head (row maxima, then exponentials and
//   sums, then scaling). Rows of a head are independent, but done one after another each row is a
//   chain of dependent steps (max -> horizontal max -> exp -> horizontal sum -> divide -> scale)
//   whose latency the core cannot hide; a pass over all rows gives it independent rows to overlap.
//   2.4x the row-at-a-time code on a 64 x 64 head (tests/nn/test_causal_softmax.cpp agrees with
//   the reference; bench/RESULTS.md has the step A/B).
// The float kernels compute a row's visible prefix in whole packets, the last one masked, and a
// last packet that would run past the row is staged through a local packet; every value depends on
// the row's visible length alone — not on width, address or neighbours — so a KV-cache step
// reproduces the full pass's rows bitwise.
#pragma once

#include <cstdint>

#include "tapegrad/isa.h"

namespace tapegrad::nn {

// P (in place of S) per the contract above; returns the largest visible S_ij (the attention-logit
// statistic), -inf for no rows.
float causal_softmax_forward(float* P, int64_t rows, int64_t width, int64_t first);
double causal_softmax_forward(double* P, int64_t rows, int64_t width, int64_t first);
// dS in place of dP, given P from the forward.
void causal_softmax_backward(float* dP, const float* P, int64_t rows, int64_t width, int64_t first);
void causal_softmax_backward(double* dP, const double* P, int64_t rows, int64_t width, int64_t first);

// The readable references (any T), which the float kernels are tested against.
template <typename T>
T causal_softmax_forward_reference(T* P, int64_t rows, int64_t width, int64_t first);
template <typename T>
void causal_softmax_backward_reference(T* dP, const T* P, int64_t rows, int64_t width, int64_t first);

// The float kernels of one instruction set (tapegrad/isa.h), unchecked: the entry points above
// check the shape and call the active set's.
struct CausalSoftmaxKernels {
  float (*forward)(float* P, int64_t rows, int64_t width, int64_t first);
  void (*backward)(float* dP, const float* P, int64_t rows, int64_t width, int64_t first);
};
const CausalSoftmaxKernels& causal_softmax_kernels(Isa isa = active_isa());
#ifdef TAPEGRAD_ISA_NS
namespace TAPEGRAD_ISA_NS {
extern const CausalSoftmaxKernels causal_softmax_kernels_table;  // a kernel file's own ISA's
}
#endif

}  // namespace tapegrad::nn
