#include "tapegrad/nn/rmsnorm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "tapegrad/nn/norm_affine.h"
#include "tapegrad/nn/norm_kernels.h"

namespace tapegrad::nn {

// The kernels, with the derivation of the backward, are rmsnorm_kernels.cpp's (one copy per ISA).
template <typename T>
void rmsnorm_forward(T* y, T* rinv, const T* x, const T* weight, int64_t rows, int64_t C, T eps) {
  rmsnorm_kernels().get<T>().forward(y, rinv, x, weight, rows, C, eps);
}

template <typename T>
void rmsnorm_backward(T* dx, T* dweight, const T* dy, const T* x, const T* rinv, const T* weight, int64_t rows,
                      int64_t C, T* scratch) {
  rmsnorm_kernels().get<T>().backward(dx, dweight, dy, x, rinv, weight, rows, C, scratch);
}

template <typename T>
void rmsnorm_backward_reference(T* dx, T* dweight, const T* dy, const T* x, const T* rinv, const T* weight,
                                int64_t rows, int64_t C) {
  std::vector<T> n(C), dn(C);
  for (int64_t r = 0; r < rows; ++r) {
    const T* dyr = dy + r * C;
    for (int64_t c = 0; c < C; ++c) {
      n[c] = x[r * C + c] * rinv[r];
      dn[c] = (weight ? weight[c] : T(1)) * dyr[c];
    }
    T mean_dn_n = 0;
    for (int64_t c = 0; c < C; ++c) mean_dn_n += dn[c] * n[c];
    mean_dn_n /= static_cast<T>(C);
    for (int64_t c = 0; c < C; ++c) dx[r * C + c] += rinv[r] * (dn[c] - n[c] * mean_dn_n);
    for (int64_t c = 0; c < C && dweight; ++c) dweight[c] += dyr[c] * n[c];
  }
}

template <typename T>
Var<T> rms_norm(Var<T> x, Var<T> weight, double eps) {
  const Shape xs = x.shape();
  check(xs.rank() >= 1 && xs.last() > 0, "rms_norm: needs a non-empty last dim, got ", xs);
  const int64_t C = xs.last(), rows = xs.rows();
  const bool affine = weight.defined();
  check(!affine || weight.shape() == Shape{C}, "rms_norm: weight ", affine ? weight.shape() : Shape{},
        " must be (", C, ") for input ", xs);
  check(eps >= 0, "rms_norm: eps must be >= 0, got ", eps);
  Tape<T>& tape = x.tape();
  const OpInputs<T> inputs{x, weight};
  Var<T> y = tape.make_output("rms_norm", xs, inputs);
  T* rinv = tape.template scratch<T>(rows);
  const T* w = affine ? weight.data() : nullptr;
  rmsnorm_forward(y.data(), rinv, x.data(), w, rows, C, static_cast<T>(eps));
  tape.record("rms_norm", inputs, y, [&tape, xd = x.data(), w, rinv, rows, C, affine](const T* dy, T* const* din) {
    rmsnorm_backward(din[0], affine ? din[1] : nullptr, dy, xd, rinv, w, rows, C,
                     tape.template workspace<T>(norm_backward_scratch(C)));
  });
  return y;
}

template <typename T>
RMSNorm<T>::RMSNorm(RMSNormOptions o) : options_(o) {
  check(o.dim > 0, "RMSNorm: dim must be positive, got ", o.dim);
  if (o.elementwise_affine) weight_ = &this->add_parameter("weight", Tensor<T>::full({o.dim}, T(1)));
}

template <typename T>
std::unique_ptr<UnaryModule<T>> RMSNorm<T>::from_spec(const NormSpec& spec) {
  return std::make_unique<RMSNorm<T>>(RMSNormOptions{spec.dim, spec.eps, true});
}

// As QK-norm: weight p[0]; stats are the n values of 1/rms.
template <typename T>
const NormRowKernels<T>* RMSNorm<T>::row_kernels() {
  static constexpr NormRowKernels<T> kernels{
      1,
      [](int64_t C) { return Shape{C}; },
      [](T* y, T* stats, const T* x, const T* const* p, int64_t n, int64_t C, T eps) {
        rmsnorm_forward(y, stats, x, p[0], n, C, eps);
      },
      [](T* dx, T* const* dp, const T* dy, const T* x, const T* stats, const T* const* p, int64_t n, int64_t C,
         T* scratch) { rmsnorm_backward(dx, dp[0], dy, x, stats, p[0], n, C, scratch); }};
  return &kernels;
}

template <typename T>
void RMSNorm<T>::reset_parameters(Rng&) {
  if (weight_) weight_->value().fill(T(1));
}

template <typename T>
Var<T> RMSNorm<T>::forward(Var<T> x) {
  return rms_norm(x, weight_ ? x.tape().param(*weight_) : Var<T>{}, options_.eps);
}

template <typename T>
std::string RMSNorm<T>::options_repr() const {
  return cat(options_.dim, ", eps=", options_.eps, ", elementwise_affine=", options_.elementwise_affine ? "true" : "false");
}

template void rmsnorm_forward<float>(float*, float*, const float*, const float*, int64_t, int64_t, float);
template void rmsnorm_forward<double>(double*, double*, const double*, const double*, int64_t, int64_t, double);
template void rmsnorm_backward<float>(float*, float*, const float*, const float*, const float*, const float*,
                                      int64_t, int64_t, float*);
template void rmsnorm_backward<double>(double*, double*, const double*, const double*, const double*,
                                       const double*, int64_t, int64_t, double*);
template void rmsnorm_backward_reference<float>(float*, float*, const float*, const float*, const float*,
                                                const float*, int64_t, int64_t);
template void rmsnorm_backward_reference<double>(double*, double*, const double*, const double*, const double*,
                                                 const double*, int64_t, int64_t);
template Var<float> rms_norm(Var<float>, Var<float>, double);
template Var<double> rms_norm(Var<double>, Var<double>, double);
template class RMSNorm<float>;
template class RMSNorm<double>;

}  // namespace tapegrad::nn
