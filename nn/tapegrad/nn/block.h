// DecoderBlock: attention then MLP, each sub-layer F wrapped in a residual connection and norms
// as the placement says (placement.h: pre, post, peri, deepnorm, or one a program registers).
// Pre-norm leaves the residual stream itself un-normalised — the norm regulates only what each
// sub-layer reads — which is why its scale can drift with depth and why the lab measures it.
#pragma once

#include <string>
#include <vector>

#include "tapegrad/nn/attention.h"
#include "tapegrad/nn/mlp_kind.h"
#include "tapegrad/nn/module.h"
#include "tapegrad/nn/norm.h"
#include "tapegrad/nn/placement.h"

namespace tapegrad::nn {

struct BlockOptions {
  int64_t dim = 0;
  int64_t heads = 1;
  NormKind norm = NormKind::parse("layernorm");
  Placement placement{};  // pre
  MlpKind mlp{};  // gelu
  int64_t mlp_hidden = 0;  // 0: the MLP's default
  bool bias = true;
  double norm_eps = 1e-5;
  NormKind qk_norm{};  // QK-norm in the attention (attention.h); default none
  // Linear maps' init (LinearOptions::init_std; 0: torch's default): the residual projections
  // (attention's output, the MLP's proj) take proj_init_std.
  double init_std = 0, proj_init_std = 0;
  int64_t layers = 1;  // blocks in the model: deepnorm's alpha and beta depend on it
  double dyt_alpha = 0.5;       // DyT's initial alpha (NormSpec) in every norm but norm1
  double dyt_alpha_attn = 0;    // ... and in norm1, the attention sub-layer's (0: dyt_alpha)
  bool dyt_beta = true;         // DyT's additive beta (NormSpec)
};

// What one forward pass looked like inside a block, for the lab's instrumentation. RMS values
// are sqrt(mean(v^2)) over every element of the (B, T, C) tensor.
struct BlockProbe {
  double residual_rms = 0;   // RMS of X, the residual stream entering the block
  double norm_out_rms = 0;   // RMS of what the attention reads: Norm1(X) (pre) or X (post)
  double attention_logit = 0;  // largest attention logit <q, k> / sqrt(HS)
};

template <typename T = float>
class DecoderBlock : public UnaryModule<T> {
 public:
  explicit DecoderBlock(BlockOptions options);
  Var<T> forward(Var<T> x) override;
  // Also fills `probe` (a few reductions over the activations; off the tape).
  Var<T> forward(Var<T> x, BlockProbe* probe);
  // The sub-layers' own initialisation, then the placement's (deepnorm's beta-scaled Xavier init).
  void reset_parameters(Rng& rng) override;

  UnaryModule<T>& norm1() { return *norm1_; }
  UnaryModule<T>& norm2() { return *norm2_; }
  CausalSelfAttention<T>& attn() { return *attn_; }
  UnaryModule<T>& mlp() { return *mlp_; }
  const BlockOptions& options() const { return options_; }
  std::string type_name() const override { return "DecoderBlock"; }
  std::string options_repr() const override;

 private:
  BlockOptions options_;
  UnaryModule<T>* norm1_;
  CausalSelfAttention<T>* attn_;
  UnaryModule<T>* norm2_;
  UnaryModule<T>* mlp_;
  // A placement's norms beyond norm1 and norm2 (which are In, or Sum where In is the identity):
  UnaryModule<T>* attn_out_norm_ = nullptr;  // Out (peri)
  UnaryModule<T>* mlp_out_norm_ = nullptr;
  UnaryModule<T>* attn_sum_norm_ = nullptr;  // Sum, when In is a norm too
  UnaryModule<T>* mlp_sum_norm_ = nullptr;
};

// sqrt(mean(v^2)) over all elements, accumulated in double.
template <typename T>
double rms(TensorView<const T> v);

}  // namespace tapegrad::nn
