// Fused log-softmax + negative log-likelihood, mean over rows, with an optional z-loss
// (PaLM, Chowdhery et al. 2022; Wortsman et al. 2023) that pulls each row's log-partition
// log Z_i = logsumexp(z_i) towards 0 and so keeps the output logits from drifting upwards:
//   loss = (1/N) sum_i [ logsumexp(z_i) - z_i[t_i] + z_loss * logsumexp(z_i)^2 ]
// for logits z of shape (..., V) flattened to (N, V) and N integer targets in [0, V).
// Never computes log(softmax(z)), which underflows to -inf for confident wrong predictions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tapegrad/isa.h"
#include "tapegrad/tape.h"

namespace tapegrad {

// The parts of the value cross_entropy returns. The objective that is differentiated is
// cross_entropy + z_loss; only cross_entropy is a loss of the model (what validation loss and
// perplexity mean). log Z_i = logsumexp(z_i) is what the z-loss acts on: its mean and minimum
// over the rows show output-logit drift (Wortsman et al. 2023: log Z running very negative).
struct CrossEntropyTerms {
  double cross_entropy = 0;  // (1/N) sum_i [lse_i - z_i[t_i]]
  double z_loss = 0;         // (1/N) sum_i c lse_i^2, the penalty (0 without a z-loss)
  double log_z_mean = 0, log_z_min = 0;
  double objective() const { return cross_entropy + z_loss; }
};

// Kernels. forward writes each row's logsumexp to `lse` (the only cache backward needs) and
// returns the terms, each accumulated in double in row order. backward adds
// scale * ((1 + 2 z_loss lse) softmax(z) - onehot(t)) to dz.
template <typename T>
CrossEntropyTerms cross_entropy_forward(T* lse, const T* logits, const int32_t* targets, int64_t N, int64_t V,
                                        double z_loss = 0);
template <typename T>
void cross_entropy_backward(T* dlogits, const T* logits, const T* lse, const int32_t* targets, int64_t N,
                            int64_t V, T scale, T z_loss = 0);

// The row kernels of one instruction set (tapegrad/isa.h): each row's logsumexp, and the
// gradient as backward above adds it. The functions above run the active one's.
template <typename T>
struct CrossEntropyFns {
  void (*logsumexp_rows)(T* lse, const T* logits, int64_t N, int64_t V);
  void (*backward)(T* dlogits, const T* logits, const T* lse, const int32_t* targets, int64_t N, int64_t V, T scale,
                   T z_loss);
};
using CrossEntropyKernels = ByPrecision<CrossEntropyFns>;
const CrossEntropyKernels& cross_entropy_kernels(Isa isa = active_isa());

// `targets` must stay alive until backward() has run (the tape keeps a pointer, not a copy).
// z_loss >= 0 is the coefficient of the z-loss term (1e-4 in PaLM); 0 leaves plain cross-entropy.
// The returned value is the objective; `terms`, if given, receives its parts.
template <typename T>
Var<T> cross_entropy(Var<T> logits, std::span<const int32_t> targets, double z_loss = 0,
                     CrossEntropyTerms* terms = nullptr);
// A temporary vector of targets would be destroyed before backward() reads it: refused.
template <typename T>
Var<T> cross_entropy(Var<T>, std::vector<int32_t>&&, double = 0, CrossEntropyTerms* = nullptr) {
  static_assert(kept_view_of_temporary<T>,
                "cross_entropy keeps a view of the targets until backward(): a temporary vector dies first; "
                "keep the targets in a variable that outlives backward()");
}

}  // namespace tapegrad
