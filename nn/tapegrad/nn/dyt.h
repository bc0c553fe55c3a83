// DyT, Dynamic Tanh (Zhu, Chen, He, LeCun & Liu 2025, "Transformers without Normalization"):
//   y = gamma ⊙ tanh(alpha x) + beta        one learned scalar alpha (init 0.5),
//                                           per-channel gamma = 1 and beta = 0 at init
// No statistics at all: where LayerNorm divides by each row's spread, DyT squashes every element
// through tanh. It bounds the output (|y| < |gamma| + |beta|) instead of fixing its scale: inputs
// 10x larger come out larger until tanh saturates, so it regulates by clipping, not rescaling.
#pragma once

#include "tapegrad/nn/module.h"
#include "tapegrad/nn/norm.h"

namespace tapegrad::nn {

// Kernels over `rows` rows of C. forward keeps t = tanh(alpha x) (rows * C) for backward. backward
// adds into dx and into dalpha (1), dgamma (C), dbeta (C) where not null; row_sums: `rows` scratch
// doubles (the per-row parts of dalpha, summed in row order: deterministic, and in double, since
// dalpha sums rows * C terms of both signs).
template <typename T>
void dyt_forward(T* y, T* t, const T* x, const T* alpha, const T* gamma, const T* beta, int64_t rows, int64_t C);
template <typename T>
void dyt_backward(T* dx, T* dalpha, T* dgamma, T* dbeta, const T* dy, const T* x, const T* t, const T* alpha,
                  const T* gamma, int64_t rows, int64_t C, double* row_sums);

// One tape node; alpha (1), gamma (C), beta (C) or undefined (no bias).
template <typename T>
Var<T> dyt(Var<T> x, Var<T> alpha, Var<T> gamma, Var<T> beta = {});

struct DyTOptions {
  int64_t dim = 0;
  double alpha_init = 0.5;  // the paper's default for non-LLM models and small LLMs
  bool bias = true;
};

template <typename T = float>
class DyT : public UnaryModule<T> {
 public:
  explicit DyT(DyTOptions options);
  // For the norm registry (norm.h): NormSpec::eps is ignored (nothing is divided), bias honoured.
  static std::unique_ptr<UnaryModule<T>> from_spec(const NormSpec& spec);
  void reset_parameters(Rng& rng) override;  // alpha = alpha_init, gamma = 1, beta = 0
  Var<T> forward(Var<T> x) override;
  const DyTOptions& options() const { return options_; }
  std::string type_name() const override { return "DyT"; }
  std::string options_repr() const override;

 private:
  DyTOptions options_;
  Parameter<T>* alpha_ = nullptr;
  Parameter<T>* gamma_ = nullptr;
  Parameter<T>* beta_ = nullptr;
};

}  // namespace tapegrad::nn
