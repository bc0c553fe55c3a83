// RMSNorm over the last dimension (Zhang & Sennrich 2019), as torch.nn.RMSNorm:
//   y = w * x / sqrt(mean(x^2) + eps)        (eps inside the square root; w = 1 at init; no bias)
// It re-scales every row to unit root-mean-square but does not re-centre it: one reduction
// instead of LayerNorm's two, and the ratios between coordinates are kept.
#pragma once

#include "tapegrad/nn/module.h"
#include "tapegrad/nn/norm.h"

namespace tapegrad::nn {

// Kernels over `rows` rows of C. forward stores r = 1/sqrt(mean(x^2) + eps) per row; weight may
// be null (no affine); backward accumulates into the non-null gradients.
template <typename T>
void rmsnorm_forward(T* y, T* rinv, const T* x, const T* weight, int64_t rows, int64_t C, T eps);
// `scratch` holds norm_backward_scratch(C) elements (see norm_affine.h).
template <typename T>
void rmsnorm_backward(T* dx, T* dweight, const T* dy, const T* x, const T* rinv, const T* weight, int64_t rows,
                      int64_t C, T* scratch);

// The textbook form of the backward, kept beside the optimised kernel as its reference
// (tests/nn/test_rmsnorm.cpp checks that they agree).
template <typename T>
void rmsnorm_backward_reference(T* dx, T* dweight, const T* dy, const T* x, const T* rinv, const T* weight,
                                int64_t rows, int64_t C);

// One tape node. weight is (C) or undefined (elementwise_affine = false).
template <typename T>
Var<T> rms_norm(Var<T> x, Var<T> weight, double eps = 1e-5);

struct RMSNormOptions {
  int64_t dim = 0;
  double eps = 1e-5;
  bool elementwise_affine = true;
};

template <typename T = float>
class RMSNorm : public UnaryModule<T> {
 public:
  explicit RMSNorm(RMSNormOptions options);
  // For the norm registry (norm.h). RMSNorm has no bias: NormSpec::bias is ignored.
  static std::unique_ptr<UnaryModule<T>> from_spec(const NormSpec& spec);
  static const NormRowKernels<T>* row_kernels();
  void reset_parameters(Rng& rng) override;  // w 1
  Var<T> forward(Var<T> x) override;
  const RMSNormOptions& options() const { return options_; }
  std::string type_name() const override { return "RMSNorm"; }
  std::string options_repr() const override;

 private:
  RMSNormOptions options_;
  Parameter<T>* weight_ = nullptr;
};

}  // namespace tapegrad::nn
