#include "tapegrad/nn/rmsnorm.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "tapegrad/nn/norm_affine.h"
#include "tapegrad/parallel.h"
#include "tapegrad/vmath.h"

namespace tapegrad::nn {

// Backward. Per row, with r = (mean(x^2) + eps)^(-1/2) and n = x r:
//   dr/dx_j = -r^3 x_j / C,  so  dn_i/dx_j = r delta_ij - x_i r^3 x_j / C = r (delta_ij - n_i n_j / C)
// and with dn = w * dy:
//   dx_j = r (dn_j - n_j mean(dn * n))
// — LayerNorm's formula without the mean(dn) term, because nothing was subtracted.

template <typename T>
void rmsnorm_forward(T* y, T* rinv, const T* x, const T* weight, int64_t rows, int64_t C, T eps) {
  parallel_for(rows, 4 * C, [&](int64_t r0, int64_t r1) {
    for (int64_t g0 = r0; g0 < r1; g0 += kNormRowGroup) {  // rows in groups: norm_affine.h
      const int64_t g1 = std::min(r1, g0 + kNormRowGroup);
      for (int64_t r = g0; r < g1; ++r)
        rinv[r] = T(1) / std::sqrt(vmath::dot(x + r * C, x + r * C, C) / static_cast<T>(C) + eps);
      for (int64_t r = g0; r < g1; ++r) {
        const T* xr = x + r * C;
        T* yr = y + r * C;
        const T s = rinv[r];
        if (weight) {
          for (int64_t c = 0; c < C; ++c) yr[c] = weight[c] * (xr[c] * s);
        } else {
          for (int64_t c = 0; c < C; ++c) yr[c] = xr[c] * s;
        }
      }
    }
  });
}

template <typename T>
void rmsnorm_backward(T* dx, T* dweight, const T* dy, const T* x, const T* rinv, const T* weight, int64_t rows,
                      int64_t C, T* scratch) {
  // Per row: one reduction, mean(dn * n) = r/C * sum_c w_c dy_c x_c, then one fused loop that
  // writes dx and adds the row's dweight share — n and dn are never stored.
  std::fill_n(scratch, norm_backward_scratch(C), T(0));
  parallel_for(rows, 6 * C, [&](int64_t r0, int64_t r1) {
    T* part = scratch + static_cast<int64_t>(omp_get_thread_num()) * 4 * C;
    T ks[kNormRowGroup];
    for (int64_t g0 = r0; g0 < r1; g0 += kNormRowGroup) {  // rows in groups: norm_affine.h
      const int64_t g1 = std::min(r1, g0 + kNormRowGroup);
      for (int64_t r = g0; r < g1 && dx; ++r) {
        const T* dyr = dy + r * C;
        const T* xr = x + r * C;
        const T sum_dn_x = weight ? vmath::lane_sum<T>(C, [&](int64_t c) { return weight[c] * dyr[c] * xr[c]; })
                                  : vmath::dot(dyr, xr, C);
        ks[r - g0] = rinv[r] * rinv[r] / static_cast<T>(C) * sum_dn_x;  // = r * mean(dn * n)
      }
      for (int64_t r = g0; r < g1; ++r) {
        const T* dyr = dy + r * C;
        const T* xr = x + r * C;
        T* dxr = dx ? dx + r * C : nullptr;
        const T s = rinv[r];
        const T k = dx ? ks[r - g0] : T(0);
        if (dxr && weight) {
          for (int64_t c = 0; c < C; ++c) dxr[c] += s * (weight[c] * dyr[c] - xr[c] * k);
        } else if (dxr) {
          for (int64_t c = 0; c < C; ++c) dxr[c] += s * (dyr[c] - xr[c] * k);
        }
        if (dweight)
          for (int64_t c = 0; c < C; ++c) part[c] += dyr[c] * xr[c] * s;
      }
    }
  });
  if (dweight) reduce_norm_partials<T>(dweight, nullptr, scratch, C);
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
  if (weight_) weight_->value.fill(T(1));
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
