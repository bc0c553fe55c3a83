#include "tapegrad/bf16.h"

namespace tapegrad {

void round_bf16(const float* x, float* out, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = round_bf16(x[i]);
}

}  // namespace tapegrad
