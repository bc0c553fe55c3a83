// ScaleNorm over the last dimension (Nguyen & Salazar 2019, "Transformers without Tears"):
//   y = g * x / max(||x||_2, eps)            one learned scalar g, initialised to sqrt(dim)
// It projects every row onto the sphere of radius g: one reduction like RMSNorm, and at init
// (g = sqrt(C)) it equals RMSNorm with unit weights, since ||x|| = sqrt(C) rms(x). What it drops
// is RMSNorm's per-channel gain — C parameters per norm become one.
#pragma once

#include "tapegrad/nn/module.h"
#include "tapegrad/nn/norm.h"

namespace tapegrad::nn {

// Kernels over `rows` rows of C. stats (2 rows): r = 1/max(||x||, eps) per row, then k = r^2 where
// the norm was above eps and 0 where it was clipped. backward adds into dx and, if not null, into
// dg (one element). scratch: norm_backward_scratch(C) elements (norm_affine.h).
template <typename T>
void scalenorm_forward(T* y, T* stats, const T* x, const T* g, int64_t rows, int64_t C, T eps);
template <typename T>
void scalenorm_backward(T* dx, T* dg, const T* dy, const T* x, const T* stats, const T* g, int64_t rows, int64_t C,
                        T* scratch);

// One tape node; g has shape (1).
template <typename T>
Var<T> scale_norm(Var<T> x, Var<T> g, double eps = 1e-5);

struct ScaleNormOptions {
  int64_t dim = 0;
  double eps = 1e-5;
};

template <typename T = float>
class ScaleNorm : public UnaryModule<T> {
 public:
  explicit ScaleNorm(ScaleNormOptions options);
  // For the norm registry (norm.h). ScaleNorm has no bias: NormSpec::bias is ignored.
  static std::unique_ptr<UnaryModule<T>> from_spec(const NormSpec& spec);
  static const NormRowKernels<T>* row_kernels();
  void reset_parameters(Rng& rng) override;  // g = sqrt(dim)
  Var<T> forward(Var<T> x) override;
  const ScaleNormOptions& options() const { return options_; }
  std::string type_name() const override { return "ScaleNorm"; }
  std::string options_repr() const override;

 private:
  ScaleNormOptions options_;
  Parameter<T>* g_ = nullptr;
};

}  // namespace tapegrad::nn
