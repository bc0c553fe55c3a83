// Causal multi-head self-attention, one fused tape node:
//   qkv = x W_qkv^T + b_qkv                       (B, T, 3C): q | k | v along the last dim
//   per head h (HS = C / NH columns of q, k, v):
//     S = q_h k_h^T / sqrt(HS)                    (T, T) attention logits
//     P = softmax(S + causal mask)                row i sees positions j <= i
//     y_h = P v_h                                 (T, HS), written into y's columns of head h
//   out = y W_proj^T + b_proj                     (B, T, C)
// Heads are read straight out of the qkv buffer with strided GEMMs (leading dimension 3C), so
// splitting and merging heads costs no copies.
//
// Optional QK-norm (Dehghani et al. 2023, Wortsman et al. 2023; OLMo 2, Qwen 3): before the
// logits, q and k of every head are normalised over their HS features by any registered norm with
// row kernels (LayerNorm, RMSNorm, ...), its weights shared by all heads (q_norm.*, k_norm.*). |S_ij| is then bounded
// by the norms' weights rather than by the size of the activations — the remedy those papers
// give for attention-logit growth, the instability the lab's max-logit metric watches.
// The LayerNorm has no bias, as in ViT-22B: a bias on k adds q_i . b to the whole row i of S,
// which the softmax cancels — it would only ever get a zero gradient.
#pragma once

#include "tapegrad/nn/linear.h"
#include "tapegrad/nn/module.h"
#include "tapegrad/nn/norm.h"

namespace tapegrad::nn {

struct AttentionDims {
  int64_t B, T, C, NH;
  int64_t HS() const { return C / NH; }
};

// The attention core for all (batch, head) pairs, given qkv (B, T, 3C). Writes the probabilities
// P (B, NH, T, T; zero above the diagonal) and y (B, T, C). Returns the largest logit S_ij over
// every visible (i, j) — a stability statistic that costs nothing extra here. `scratch` holds
// attention_core_scratch(d, false) elements.
template <typename T>
T attention_core_forward(T* att, T* y, const T* qkv, const AttentionDims& d, T* scratch);
// Backward of the core: dqkv (B, T, 3C) is *overwritten* (every element belongs to exactly one
// head's q, k or v slice); scratch holds attention_core_scratch(d, true) elements.
template <typename T>
void attention_core_backward(T* dqkv, T* scratch, const T* dy, const T* qkv, const T* att, const AttentionDims& d);
// Elements of scratch the core needs for the current thread count (a tile per thread number).
template <typename T>
int64_t attention_core_scratch(const AttentionDims& d, bool backward);

// The same through tapegrad::gemm, one head after another: the path for double and for head
// sizes attention_head_kernels.h does not take, and the reference the float kernels are tested
// against. The backward's scratch: num_threads() * T * T elements.
template <typename T>
T attention_core_forward_reference(T* att, T* y, const T* qkv, const AttentionDims& d);
template <typename T>
void attention_core_backward_reference(T* dqkv, T* scratch, const T* dy, const T* qkv, const T* att,
                                       const AttentionDims& d);

// QK-norm for causal_self_attention: null kernels (the default) turn it off; else the norm's row
// kernels (norm.h) and its one parameter for q and for k (undefined if the norm has none).
template <typename T>
struct QKNormInputs {
  const NormRowKernels<T>* kernels = nullptr;
  Var<T> q_weight, k_weight;
  double eps = 1e-5;
};

// One tape node over x (B, T, C); biases both defined or both undefined. If `max_logit` is given,
// the largest attention logit of this call is stored there.
template <typename T>
Var<T> causal_self_attention(Var<T> x, Var<T> w_qkv, Var<T> w_proj, Var<T> b_qkv, Var<T> b_proj, int64_t heads,
                             T* max_logit = nullptr, const QKNormInputs<T>& qk_norm = {});

// Inference over cached keys and values (kv_cache.h): x holds n new positions past .. past + n - 1
// of one sequence, (1, n, C). Their k and v rows are written to keys/values (capacity rows of C)
// at those positions, and row i attends to positions 0 .. past + i — exactly what the full
// causal pass computes for them. Forward only: x must not require a gradient.
template <typename T>
struct AttentionCache {
  T* keys = nullptr;
  T* values = nullptr;
  int64_t past = 0, capacity = 0;
};
template <typename T>
Var<T> cached_self_attention(Var<T> x, Var<T> w_qkv, Var<T> w_proj, Var<T> b_qkv, Var<T> b_proj, int64_t heads,
                             const AttentionCache<T>& cache, T* max_logit = nullptr, const QKNormInputs<T>& qk_norm = {});

struct AttentionOptions {
  int64_t dim = 0;
  int64_t heads = 1;
  bool bias = true;
  NormKind qk_norm{};  // normalise q and k per head (see above); default none
  double qk_norm_eps = 1e-5;
  // The qkv and output projections' init as LinearOptions::init_std (0: torch's default).
  double init_std = 0, proj_init_std = 0;
};

template <typename T = float>
class CausalSelfAttention : public UnaryModule<T> {
 public:
  explicit CausalSelfAttention(AttentionOptions options);
  Var<T> forward(Var<T> x) override;
  // The same, writing this pass's largest logit to *max_logit instead of keeping it in the
  // module: safe when several tapes run the module at once (a data-parallel step's workers).
  Var<T> forward(Var<T> x, T* max_logit);

  Linear<T>& qkv() { return *qkv_; }
  Linear<T>& proj() { return *proj_; }
  // The per-head q and k norms; null without QK-norm.
  UnaryModule<T>* q_norm() { return q_norm_; }
  UnaryModule<T>* k_norm() { return k_norm_; }
  const AttentionOptions& options() const { return options_; }
  // Largest attention logit seen by the last forward() (0 before any).
  T last_max_logit() const { return max_logit_; }
  // While attached, forward() runs cached_self_attention on it (generation; Decoder attaches
  // and detaches around one pass).
  void attach_cache(const AttentionCache<T>& cache) { cache_ = cache; }
  void detach_cache() { cache_ = {}; }
  std::string type_name() const override { return "CausalSelfAttention"; }
  std::string options_repr() const override;

 private:
  AttentionOptions options_;
  Linear<T>* qkv_;
  Linear<T>* proj_;
  UnaryModule<T>* q_norm_ = nullptr;
  UnaryModule<T>* k_norm_ = nullptr;
  T max_logit_ = 0;
  AttentionCache<T> cache_;
};

}  // namespace tapegrad::nn
