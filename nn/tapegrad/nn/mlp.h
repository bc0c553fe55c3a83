// The feed-forward half of a transformer block, one fused tape node:
//   gelu:   out = W_proj gelu(W_fc x + b_fc) + b_proj                   W_fc (H, C), W_proj (C, H)
//   swiglu: out = W_proj (silu(g) * u) + b_proj,  [g | u] = W_fc x + b_fc   W_fc (2H, C): rows [0, H)
//           are the gate, rows [H, 2H) the up projection (LLaMA's w1 and w3, stored together so
//           one GEMM computes both).
#pragma once

#include <string>

#include "tapegrad/isa.h"
#include "tapegrad/nn/module.h"

namespace tapegrad::nn {

// The activation of this fused MLP (the registry's "gelu" and "swiglu", mlp_kind.h).
enum class MlpActivation { kGelu, kSwiGLU };
std::string to_string(MlpActivation a);  // "gelu", "swiglu"

// SwiGLU's activation over rows of h = [g | u] (2H wide): a = silu(g) * u (H wide), and its
// backward, accumulating into dh (or writing it, with accumulate = false).
template <typename T>
void swiglu_forward(T* a, const T* h, int64_t rows, int64_t H);
template <typename T>
void swiglu_backward(T* dh, const T* h, const T* da, int64_t rows, int64_t H, bool accumulate = true);
// The SwiGLU kernels of one instruction set (tapegrad/isa.h); the two above run the active one's.
template <typename T>
struct SwigluFns {
  void (*forward)(T* a, const T* h, int64_t rows, int64_t H);
  void (*backward)(T* dh, const T* h, const T* da, int64_t rows, int64_t H, bool accumulate);
};
using SwigluKernels = ByPrecision<SwigluFns>;
const SwigluKernels& swiglu_kernels(Isa isa = active_isa());

// One tape node. Biases both defined or both undefined.
template <typename T>
Var<T> mlp(Var<T> x, Var<T> w_fc, Var<T> w_proj, Var<T> b_fc, Var<T> b_proj, MlpActivation activation);

struct MlpOptions {
  int64_t dim = 0;
  int64_t hidden = 0;  // 0: 4 * dim for gelu; for swiglu 8/3 * dim rounded up to a multiple of 8,
                       // which keeps the parameter count of the gelu MLP (3 C H ~ 8 C^2)
  MlpActivation activation = MlpActivation::kGelu;
  bool bias = true;
  // The fc and proj maps' init as LinearOptions::init_std (0: torch's default). GPT-2 scales the
  // residual projection: proj_init_std = init_std / sqrt(2 layers).
  double init_std = 0, proj_init_std = 0;
};
int64_t default_mlp_hidden(int64_t dim, MlpActivation activation);

template <typename T = float>
class MLP : public UnaryModule<T> {
 public:
  explicit MLP(MlpOptions options);
  void reset_parameters(Rng& rng) override;
  Var<T> forward(Var<T> x) override;
  const MlpOptions& options() const { return options_; }
  std::string type_name() const override { return "MLP"; }
  std::string options_repr() const override;

 private:
  MlpOptions options_;
  Parameter<T>* w_fc_;
  Parameter<T>* w_proj_;
  Parameter<T>* b_fc_ = nullptr;
  Parameter<T>* b_proj_ = nullptr;
};

}  // namespace tapegrad::nn
