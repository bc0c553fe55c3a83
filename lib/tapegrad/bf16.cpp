#include "tapegrad/bf16.h"

namespace tapegrad {

TAPEGRAD_ISA_DISPATCH(Bf16RoundingFns, bf16_rounding)

void round_bf16(const float* x, float* out, int64_t n) { bf16_rounding().round(x, out, n); }

}  // namespace tapegrad
