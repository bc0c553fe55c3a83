// LayerNorm's row kernels, one copy per instruction set (tapegrad/isa.h); layernorm.cpp runs the
// active one.
#include "tapegrad/isa_kernel.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "tapegrad/nn/norm_affine.h"
#include "tapegrad/nn/norm_kernels.h"
#include "tapegrad/parallel.h"
#include "tapegrad/vmath.h"

namespace tapegrad::nn::TAPEGRAD_ISA_NS {

namespace {

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
void forward(T* y, T* mean, T* rstd, const T* x, const T* gamma, const T* beta, int64_t rows, int64_t C,
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
void backward(T* dx, T* dgamma, T* dbeta, const T* dy, const T* x, const T* mean, const T* rstd,
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
      // Each parameter's share when its own gradient is wanted (gamma may be a constant while beta
      // learns: tg.nn.functional.layer_norm with a constant weight).
      for (int64_t r = g0; r < g1 && (dgamma || dbeta); ++r) {
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
  if (dgamma || dbeta) reduce_norm_partials(dgamma, dbeta, scratch, C);
}

}  // namespace

extern const LayerNormKernels layernorm_kernels_table{{&forward<float>, &backward<float>},
                                                      {&forward<double>, &backward<double>}};

}  // namespace tapegrad::nn::TAPEGRAD_ISA_NS
