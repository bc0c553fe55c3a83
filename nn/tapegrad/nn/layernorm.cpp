#include "tapegrad/nn/layernorm.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "tapegrad/nn/norm_affine.h"
#include "tapegrad/parallel.h"
#include "tapegrad/vmath.h"

namespace tapegrad::nn {

// Backward. Per row, with r = rstd and n = (x - mean) r:
//   dn/dx has entries dn_i/dx_j = r (delta_ij - 1/C - n_i n_j / C)
// (the -1/C from the mean, the n_i n_j term from the variance), so with dn = gamma * dy:
//   dx_j = sum_i dn_i dn_i/dx_j = r (dn_j - mean(dn) - n_j mean(dn * n))
// — two row reductions and one pass, never the C x C Jacobian. The same pass adds the row's
// share of the parameter gradients (norm_affine.h).
//
// The variance is computed in two passes (mean first, then the mean of squared deviations),
// never as E[x^2] - E[x]^2, which cancels catastrophically when |mean| >> std. Rows go in groups
// (norm_affine.h).

template <typename T>
void layernorm_forward(T* y, T* mean, T* rstd, const T* x, const T* gamma, const T* beta, int64_t rows, int64_t C,
                       T eps) {
  parallel_for(rows, 6 * C, [&](int64_t r0, int64_t r1) {
    for (int64_t g0 = r0; g0 < r1; g0 += kNormRowGroup) {
      const int64_t g1 = std::min(r1, g0 + kNormRowGroup);
      for (int64_t r = g0; r < g1; ++r) mean[r] = vmath::sum(x + r * C, C) / static_cast<T>(C);
      for (int64_t r = g0; r < g1; ++r)
        rstd[r] = T(1) / std::sqrt(vmath::sum_sq_dev(x + r * C, mean[r], C) / static_cast<T>(C) + eps);
      for (int64_t r = g0; r < g1; ++r) {
        const T* xr = x + r * C;
        T* yr = y + r * C;
        const T m = mean[r], s = rstd[r];
        if (gamma && beta) {
          for (int64_t c = 0; c < C; ++c) yr[c] = gamma[c] * ((xr[c] - m) * s) + beta[c];  // vectorized
        } else if (gamma) {
          for (int64_t c = 0; c < C; ++c) yr[c] = gamma[c] * ((xr[c] - m) * s);
        } else {
          for (int64_t c = 0; c < C; ++c) yr[c] = (xr[c] - m) * s;
        }
      }
    }
  });
}

template <typename T>
void layernorm_backward(T* dx, T* dgamma, T* dbeta, const T* dy, const T* x, const T* mean, const T* rstd,
                        const T* gamma, int64_t rows, int64_t C, T* scratch) {
  // Per row: two reductions, sum(dn) and sum(dn * (x - mean)), then one fused loop that writes
  // dx and adds the row's dgamma and dbeta shares — n and dn are never stored.
  std::fill_n(scratch, norm_backward_scratch(C), T(0));
  parallel_for(rows, 8 * C, [&](int64_t r0, int64_t r1) {
    T* part = scratch + static_cast<int64_t>(omp_get_thread_num()) * 4 * C;
    T mean_dn[kNormRowGroup], k[kNormRowGroup];
    for (int64_t g0 = r0; g0 < r1; g0 += kNormRowGroup) {
      const int64_t g1 = std::min(r1, g0 + kNormRowGroup);
      if (dx) {
        for (int64_t r = g0; r < g1; ++r) {  // the row reductions
          const T* dyr = dy + r * C;
          const T* xr = x + r * C;
          const T m = mean[r];
          T sum_dn, sum_dn_xc;
          if (gamma) {
            sum_dn = vmath::lane_sum<T>(C, [&](int64_t c) { return gamma[c] * dyr[c]; });
            sum_dn_xc = vmath::lane_sum<T>(C, [&](int64_t c) { return gamma[c] * dyr[c] * (xr[c] - m); });
          } else {
            sum_dn = vmath::sum(dyr, C);
            sum_dn_xc = vmath::lane_sum<T>(C, [&](int64_t c) { return dyr[c] * (xr[c] - m); });
          }
          mean_dn[r - g0] = sum_dn / static_cast<T>(C);
          k[r - g0] = rstd[r] * rstd[r] * sum_dn_xc / static_cast<T>(C);  // = s * mean(dn * n)
        }
        for (int64_t r = g0; r < g1; ++r) {
          const T* dyr = dy + r * C;
          const T* xr = x + r * C;
          T* dxr = dx + r * C;
          const T m = mean[r], s = rstd[r], mdn = mean_dn[r - g0], kr = k[r - g0];
          if (gamma) {
            for (int64_t c = 0; c < C; ++c) dxr[c] += s * (gamma[c] * dyr[c] - mdn - (xr[c] - m) * kr);
          } else {
            for (int64_t c = 0; c < C; ++c) dxr[c] += s * (dyr[c] - mdn - (xr[c] - m) * kr);
          }
        }
      }
      for (int64_t r = g0; r < g1 && dgamma; ++r) {
        const T* dyr = dy + r * C;
        const T* xr = x + r * C;
        const T m = mean[r], s = rstd[r];
        for (int64_t c = 0; c < C; ++c) {
          part[c] += dyr[c] * ((xr[c] - m) * s);
          part[C + c] += dyr[c];
        }
      }
    }
  });
  if (dgamma) reduce_norm_partials(dgamma, dbeta, scratch, C);
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
  if (weight_) weight_->value.fill(T(1));
  if (bias_) bias_->value.fill(T(0));
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
