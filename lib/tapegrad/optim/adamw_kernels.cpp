// AdamW's element loop (adamw.h), one copy per instruction set (tapegrad/isa.h).
#include "tapegrad/isa_kernel.h"

#include <cmath>

#include "tapegrad/optim/adamw.h"
#include "tapegrad/vmath.h"

namespace tapegrad::TAPEGRAD_ISA_NS {

namespace {

template <typename T>
void update(T* __restrict w, T* __restrict m, T* __restrict v, const T* __restrict g, int64_t n, T g_scale, T beta1, T beta2, T lr_hat, T eps, T decay) {
  for (int64_t i = 0; i < n; ++i) {  // vectorized
    const T gi = g_scale * g[i];
    m[i] = beta1 * m[i] + (T(1) - beta1) * gi;
    v[i] = beta2 * v[i] + (T(1) - beta2) * gi * gi;
    w[i] -= lr_hat * m[i] / (std::sqrt(v[i]) + eps) + decay * w[i];
  }
}

// update()'s arithmetic, element for element, also returning sum (w_after - w_before)^2 in double
// (the sum vmath::sum_squared_diff takes over the same n).
template <typename T>
double update_measured(T* __restrict w, T* __restrict m, T* __restrict v, const T* __restrict g, int64_t n, T g_scale, T beta1, T beta2, T lr_hat, T eps, T decay) {
  return vmath::lane_sum<double>(n, [=](int64_t i) {
    const T gi = g_scale * g[i];
    m[i] = beta1 * m[i] + (T(1) - beta1) * gi;
    v[i] = beta2 * v[i] + (T(1) - beta2) * gi * gi;
    const T before = w[i];
    w[i] -= lr_hat * m[i] / (std::sqrt(v[i]) + eps) + decay * w[i];
    const double d = static_cast<double>(w[i]) - static_cast<double>(before);
    return d * d;
  });
}

}  // namespace

extern const AdamWKernels adamw_kernels_table{{&update<float>, &update_measured<float>},
                                              {&update<double>, &update_measured<double>}};

}  // namespace tapegrad::TAPEGRAD_ISA_NS
