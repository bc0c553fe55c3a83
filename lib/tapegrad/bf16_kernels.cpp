// bf16.h's array rounding, one copy per instruction set (tapegrad/isa.h): the emulated bf16 path
// rounds every GEMM operand it does not get rounded, so the copy must be the one TAPEGRAD_ISA
// names, like every other kernel of the step. Integer arithmetic and one float compare per value:
// every copy gives the same bits.
#include "tapegrad/isa_kernel.h"

#include "tapegrad/bf16.h"

namespace tapegrad::TAPEGRAD_ISA_NS {

namespace {

void round_array(const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = round_bf16(x[i]);  // vectorized
}

}  // namespace

extern const Bf16RoundingFns bf16_rounding_table{&round_array};

}  // namespace tapegrad::TAPEGRAD_ISA_NS
