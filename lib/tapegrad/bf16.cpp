#include "tapegrad/bf16.h"

namespace tapegrad {

// Integer arithmetic only, so every clone gives the same bits; cloned per vector width (GCC picks
// the widest the CPU runs when the library loads) since the emulated GEMM path rounds every
// operand through here.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void round_bf16(const float* x, float* out, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = round_bf16(x[i]);
}

}  // namespace tapegrad
