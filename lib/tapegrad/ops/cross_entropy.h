// Fused log-softmax + negative log-likelihood, mean over rows, with an optional z-loss
// (PaLM, Chowdhery et al. 2022; Wortsman et al. 2023) that pulls each row's log-partition
// log Z_i = logsumexp(z_i) towards 0 and so keeps the output logits from drifting upwards:
//   loss = (1/N) sum_i [ logsumexp(z_i) - z_i[t_i] + z_loss * logsumexp(z_i)^2 ]
// for logits z of shape (..., V) flattened to (N, V) and N integer targets in [0, V).
// Never computes log(softmax(z)), which underflows to -inf for confident wrong predictions.
#pragma once

#include <cstdint>
#include <span>

#include "tapegrad/tape.h"

namespace tapegrad {

// Kernels. forward writes each row's logsumexp to `lse` (the only cache backward needs) and
// returns the mean loss, accumulated in double in row order. backward adds
// scale * ((1 + 2 z_loss lse) softmax(z) - onehot(t)) to dz.
template <typename T>
double cross_entropy_forward(T* lse, const T* logits, const int32_t* targets, int64_t N, int64_t V,
                             double z_loss = 0);
template <typename T>
void cross_entropy_backward(T* dlogits, const T* logits, const T* lse, const int32_t* targets, int64_t N,
                            int64_t V, T scale, T z_loss = 0);

// `targets` must stay alive until backward() has run (the tape keeps a pointer, not a copy).
// z_loss >= 0 is the coefficient of the z-loss term (1e-4 in PaLM); 0 leaves plain cross-entropy.
template <typename T>
Var<T> cross_entropy(Var<T> logits, std::span<const int32_t> targets, double z_loss = 0);

}  // namespace tapegrad
