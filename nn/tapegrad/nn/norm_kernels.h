// The row kernels of LayerNorm and RMSNorm as tables, one per instruction set (tapegrad/isa.h):
// layernorm_forward and friends (layernorm.h, rmsnorm.h) run the active set's; a test can run
// every set this CPU supports against the references.
#pragma once

#include <cstdint>

#include "tapegrad/isa.h"

namespace tapegrad::nn {

template <typename T>
struct LayerNormFns {
  void (*forward)(T* y, T* mean, T* rstd, const T* x, const T* gamma, const T* beta, int64_t rows, int64_t C, T eps);
  void (*backward)(T* dx, T* dgamma, T* dbeta, const T* dy, const T* x, const T* mean, const T* rstd, const T* gamma,
                   int64_t rows, int64_t C, T* scratch);
};
using LayerNormKernels = ByPrecision<LayerNormFns>;
const LayerNormKernels& layernorm_kernels(Isa isa = active_isa());

template <typename T>
struct RmsNormFns {
  void (*forward)(T* y, T* rinv, const T* x, const T* weight, int64_t rows, int64_t C, T eps);
  void (*backward)(T* dx, T* dweight, const T* dy, const T* x, const T* rinv, const T* weight, int64_t rows, int64_t C,
                   T* scratch);
};
using RmsNormKernels = ByPrecision<RmsNormFns>;
const RmsNormKernels& rmsnorm_kernels(Isa isa = active_isa());

}  // namespace tapegrad::nn
