// This machine's bfloat16 peak, as fma_peak.h measures the float32 one: the FLOP/s of a loop of
// independent bf16 dot products that never leaves the registers, per instruction —
//   avx512_bf16  vdpbf16ps zmm: 16 lanes x 2 products = 64 FLOP per instruction, 12 chains;
//   amx          tdpbf16ps on four accumulator tiles: 16 x 16 x 32 products = 16,384 FLOP each.
// The ceiling a bf16 step's fraction is measured against (bench_step --precision bf16).
#pragma once

#include <string>
#include <vector>

namespace tapegrad::bench {

struct Bf16Peak {
  std::string instruction;  // "avx512_bf16" | "amx"
  int threads = 0;
  double gflops = 0;  // the best of a few timed runs
};

// The instructions this CPU (and OS) runs.
std::vector<std::string> bf16_instructions();
Bf16Peak measure_bf16_peak(const std::string& instruction, int threads, double seconds = 0.2);

}  // namespace tapegrad::bench
