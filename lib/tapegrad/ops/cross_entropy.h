// Fused log-softmax + negative log-likelihood, mean over rows:
//   loss = (1/N) sum_i [ logsumexp(z_i) - z_i[t_i] ]
// for logits z of shape (..., V) flattened to (N, V) and N integer targets in [0, V).
// Never computes log(softmax(z)), which underflows to -inf for confident wrong predictions.
#pragma once

#include <cstdint>
#include <span>

#include "tapegrad/tape.h"

namespace tapegrad {

// Kernels. forward writes each row's logsumexp to `lse` (the only cache backward needs) and
// returns the mean loss, accumulated in double in row order. backward adds
// scale * (softmax(z) - onehot(t)) to dz.
template <typename T>
double cross_entropy_forward(T* lse, const T* logits, const int32_t* targets, int64_t N, int64_t V);
template <typename T>
void cross_entropy_backward(T* dlogits, const T* logits, const T* lse, const int32_t* targets, int64_t N,
                            int64_t V, T scale);

// `targets` must stay alive until backward() has run (the tape keeps a pointer, not a copy).
template <typename T>
Var<T> cross_entropy(Var<T> logits, std::span<const int32_t> targets);

}  // namespace tapegrad
