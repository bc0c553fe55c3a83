// AdamW's element loop (adamw.h), one copy per instruction set (tapegrad/isa.h).
#include "tapegrad/isa_kernel.h"

#include <cmath>

#include "tapegrad/optim/adamw.h"

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

}  // namespace

extern const AdamWKernels adamw_kernels_table{{&update<float>}, {&update<double>}};

}  // namespace tapegrad::TAPEGRAD_ISA_NS
