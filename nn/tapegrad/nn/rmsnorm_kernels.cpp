// RMSNorm's row kernels, one copy per instruction set (tapegrad/isa.h); rmsnorm.cpp runs the
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

// Backward. Per row, with r = (mean(x^2) + eps)^(-1/2) and n = x r:
//   dr/dx_j = -r^3 x_j / C,  so  dn_i/dx_j = r delta_ij - x_i r^3 x_j / C = r (delta_ij - n_i n_j / C)
// and with dn = w * dy:
//   dx_j = r (dn_j - n_j mean(dn * n))
// — LayerNorm's formula without the mean(dn) term, because nothing was subtracted.

template <typename T>
void forward(T* y, T* rinv, const T* x, const T* weight, int64_t rows, int64_t C, T eps) {
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
void backward(T* dx, T* dweight, const T* dy, const T* x, const T* rinv, const T* weight, int64_t rows,
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

}  // namespace

extern const RmsNormKernels rmsnorm_kernels_table{{&forward<float>, &backward<float>},
                                                  {&forward<double>, &backward<double>}};

}  // namespace tapegrad::nn::TAPEGRAD_ISA_NS
