#include "tapegrad/nn/layernorm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "tapegrad/nn/norm_affine.h"
#include "tapegrad/nn/norm_kernels.h"

namespace tapegrad::nn {

// The kernels, with the derivation of the backward, are layernorm_kernels.cpp's (one copy per ISA).
template <typename T>
void layernorm_forward(T* y, T* mean, T* rstd, const T* x, const T* gamma, const T* beta, int64_t rows, int64_t C,
                       T eps) {
  layernorm_kernels().get<T>().forward(y, mean, rstd, x, gamma, beta, rows, C, eps);
}

template <typename T>
void layernorm_backward(T* dx, T* dgamma, T* dbeta, const T* dy, const T* x, const T* mean, const T* rstd,
                        const T* gamma, int64_t rows, int64_t C, T* scratch) {
  layernorm_kernels().get<T>().backward(dx, dgamma, dbeta, dy, x, mean, rstd, gamma, rows, C, scratch);
}

template <typename T>
void layernorm_backward_reference(T* dx, T* dgamma, T* dbeta, const T* dy, const T* x, const T* mean, const T* rstd,
                                  const T* gamma, int64_t rows, int64_t C) {
  std::vector<T> n(C), dn(C);
  for (int64_t r = 0; r < rows; ++r) {
    const T* dyr = dy + r * C;
    const T* xr = x + r * C;
    for (int64_t c = 0; c < C; ++c) {
      n[c] = (xr[c] - mean[r]) * rstd[r];
      dn[c] = (gamma ? gamma[c] : T(1)) * dyr[c];
    }
    T mean_dn = 0, mean_dn_n = 0;
    for (int64_t c = 0; c < C; ++c) mean_dn += dn[c], mean_dn_n += dn[c] * n[c];
    mean_dn /= static_cast<T>(C), mean_dn_n /= static_cast<T>(C);
    for (int64_t c = 0; c < C; ++c) dx[r * C + c] += rstd[r] * (dn[c] - mean_dn - n[c] * mean_dn_n);
    for (int64_t c = 0; c < C && dgamma; ++c) dgamma[c] += dyr[c] * n[c];
    for (int64_t c = 0; c < C && dbeta; ++c) dbeta[c] += dyr[c];
  }
}

template <typename T>
Var<T> layer_norm(Var<T> x, Var<T> gamma, Var<T> beta, double eps) {
  const Shape xs = x.shape();
  check(xs.rank() >= 1 && xs.last() > 0, "layer_norm: needs a non-empty last dim, got ", xs);
  const int64_t C = xs.last(), rows = xs.rows();
  const bool affine = gamma.defined(), has_beta = beta.defined();
  check(affine || !has_beta, "layer_norm: beta needs gamma (a bias without a gain)");
  check(!affine || (gamma.shape() == Shape{C} && (!has_beta || beta.shape() == Shape{C})), "layer_norm: gamma ",
        affine ? gamma.shape() : Shape{}, " and beta ", has_beta ? beta.shape() : Shape{}, " must be (", C,
        ") for input ", xs);
  check(eps >= 0, "layer_norm: eps must be >= 0, got ", eps);
  Tape<T>& tape = x.tape();
  const OpInputs<T> inputs{x, gamma, beta};
  Var<T> y = tape.make_output("layer_norm", xs, inputs);
  T* mean = tape.template scratch<T>(rows);
  T* rstd = tape.template scratch<T>(rows);
  const T* g = affine ? gamma.data() : nullptr;
  layernorm_forward(y.data(), mean, rstd, x.data(), g, has_beta ? beta.data() : nullptr, rows, C, static_cast<T>(eps));
  tape.record("layer_norm", inputs, y,
              [&tape, xd = x.data(), g, mean, rstd, rows, C, affine, has_beta](const T* dy, T* const* din) {
                layernorm_backward(din[0], affine ? din[1] : nullptr, has_beta ? din[2] : nullptr, dy, xd, mean, rstd,
                                   g, rows, C, tape.template workspace<T>(norm_backward_scratch(C)));
              });
  return y;
}

template <typename T>
LayerNorm<T>::LayerNorm(LayerNormOptions o) : options_(o) {
  check(o.dim > 0, "LayerNorm: dim must be positive, got ", o.dim);
  if (o.elementwise_affine) {
    weight_ = &this->add_parameter("weight", Tensor<T>::full({o.dim}, T(1)));
    if (o.bias) bias_ = &this->add_parameter("bias", Tensor<T>(Shape{o.dim}));
  }
}

template <typename T>
std::unique_ptr<UnaryModule<T>> LayerNorm<T>::from_spec(const NormSpec& spec) {
  return std::make_unique<LayerNorm<T>>(LayerNormOptions{spec.dim, spec.eps, true, spec.bias});
}

// As QK-norm: gamma only (p[0]); stats are the n means, then the n rstds.
template <typename T>
const NormRowKernels<T>* LayerNorm<T>::row_kernels() {
  static constexpr NormRowKernels<T> kernels{
      2,
      [](int64_t C) { return Shape{C}; },
      [](T* y, T* stats, const T* x, const T* const* p, int64_t n, int64_t C, T eps) {
        layernorm_forward(y, stats, stats + n, x, p[0], static_cast<const T*>(nullptr), n, C, eps);
      },
      [](T* dx, T* const* dp, const T* dy, const T* x, const T* stats, const T* const* p, int64_t n, int64_t C,
         T* scratch) {
        layernorm_backward(dx, dp[0], static_cast<T*>(nullptr), dy, x, stats, stats + n, p[0], n, C, scratch);
      }};
  return &kernels;
}

template <typename T>
void LayerNorm<T>::reset_parameters(Rng&) {
  if (weight_) weight_->value().fill(T(1));
  if (bias_) bias_->value().fill(T(0));
}

template <typename T>
Var<T> LayerNorm<T>::forward(Var<T> x) {
  Tape<T>& tape = x.tape();
  return layer_norm(x, weight_ ? tape.param(*weight_) : Var<T>{}, bias_ ? tape.param(*bias_) : Var<T>{},
                    options_.eps);
}

template <typename T>
std::string LayerNorm<T>::options_repr() const {
  return cat(options_.dim, ", eps=", options_.eps, ", elementwise_affine=", options_.elementwise_affine ? "true" : "false",
             options_.elementwise_affine && !options_.bias ? ", bias=false" : "");
}

template void layernorm_forward<float>(float*, float*, float*, const float*, const float*, const float*, int64_t,
                                       int64_t, float);
template void layernorm_forward<double>(double*, double*, double*, const double*, const double*, const double*,
                                        int64_t, int64_t, double);
template void layernorm_backward<float>(float*, float*, float*, const float*, const float*, const float*,
                                        const float*, const float*, int64_t, int64_t, float*);
template void layernorm_backward<double>(double*, double*, double*, const double*, const double*, const double*,
                                         const double*, const double*, int64_t, int64_t, double*);
template void layernorm_backward_reference<float>(float*, float*, float*, const float*, const float*, const float*,
                                                  const float*, const float*, int64_t, int64_t);
template void layernorm_backward_reference<double>(double*, double*, double*, const double*, const double*,
                                                   const double*, const double*, const double*, int64_t, int64_t);
template Var<float> layer_norm(Var<float>, Var<float>, Var<float>, double);
template Var<double> layer_norm(Var<double>, Var<double>, Var<double>, double);
template class LayerNorm<float>;
template class LayerNorm<double>;

}  // namespace tapegrad::nn
