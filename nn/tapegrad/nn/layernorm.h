// LayerNorm over the last dimension (Ba, Kiros & Hinton 2016), as torch.nn.LayerNorm:
//   y = gamma * (x - mean) / sqrt(var + eps) + beta,   var the biased variance over the last dim
// gamma = 1, beta = 0 at initialisation. It re-centres and re-scales every row.
#pragma once

#include "tapegrad/nn/module.h"
#include "tapegrad/nn/norm.h"

namespace tapegrad::nn {

// Kernels over `rows` rows of C. forward stores the two statistics backward needs, mean and
// rstd = 1/sqrt(var + eps), one per row. gamma may be null (no affine), beta null (no bias);
// backward accumulates into the non-null gradients.
template <typename T>
void layernorm_forward(T* y, T* mean, T* rstd, const T* x, const T* gamma, const T* beta, int64_t rows, int64_t C,
                       T eps);
// `scratch` holds norm_backward_scratch(C) elements (see norm_affine.h).
template <typename T>
void layernorm_backward(T* dx, T* dgamma, T* dbeta, const T* dy, const T* x, const T* mean, const T* rstd,
                        const T* gamma, int64_t rows, int64_t C, T* scratch);

// The textbook form of the backward — materialise n and dn, two reductions, then dx; gamma and
// beta gradients in a second pass over the rows — kept beside the optimised kernel as its
// reference (tests/nn/test_layernorm.cpp checks that they agree).
template <typename T>
void layernorm_backward_reference(T* dx, T* dgamma, T* dbeta, const T* dy, const T* x, const T* mean, const T* rstd,
                                  const T* gamma, int64_t rows, int64_t C);

// One tape node. gamma and beta are (C); beta may be undefined (no bias), and both are undefined
// for elementwise_affine = false.
template <typename T>
Var<T> layer_norm(Var<T> x, Var<T> gamma, Var<T> beta, double eps = 1e-5);

struct LayerNormOptions {
  int64_t dim = 0;
  double eps = 1e-5;
  bool elementwise_affine = true;
  bool bias = true;  // with elementwise_affine: add beta (torch's LayerNorm(bias=False) drops it)
};

template <typename T = float>
class LayerNorm : public UnaryModule<T> {
 public:
  explicit LayerNorm(LayerNormOptions options);
  // For the norm registry (norm.h).
  static std::unique_ptr<UnaryModule<T>> from_spec(const NormSpec& spec);
  static const NormRowKernels<T>* row_kernels();
  void reset_parameters(Rng& rng) override;  // gamma 1, beta 0
  Var<T> forward(Var<T> x) override;
  const LayerNormOptions& options() const { return options_; }
  std::string type_name() const override { return "LayerNorm"; }
  std::string options_repr() const override;

 private:
  LayerNormOptions options_;
  Parameter<T>* weight_ = nullptr;
  Parameter<T>* bias_ = nullptr;
};

}  // namespace tapegrad::nn
