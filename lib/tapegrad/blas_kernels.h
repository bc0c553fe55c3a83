// Which of OpenBLAS's kernel sets runs tapegrad's GEMMs.
//
// OpenBLAS as Debian ships it (a DYNAMIC_ARCH build) picks its kernels once, when the library is
// loaded, from the CPU's family and model numbers. A release older than the CPU does not know
// the model and falls back to its oldest x86-64 kernels: bookworm's 0.3.21 runs Sapphire and
// Emerald Rapids (family 6, models 143 and 207) on its "Prescott" SSE3 kernels, an sgemm of
// ~30 GFLOP/s per core where its AVX-512 kernels reach ~140 on the same core (bench/RESULTS.md)
// — every GEMM, and so every training step, 3x slower than the machine allows.
//
// The remedy is OpenBLAS's own: its selection honours OPENBLAS_CORETYPE, and its dynamic-arch
// entry points (gotoblas_dynamic_quit / gotoblas_dynamic_init) run the selection again.
// tapegrad does that once, before its first GEMM, and only when
//   - the user has not set OPENBLAS_CORETYPE (a user's choice always wins), and
//   - the kernels OpenBLAS chose predate AVX2 while the CPU and OS support AVX2 + FMA or AVX-512:
//     the choice is then "SkylakeX" (AVX-512 F/CD/BW/DQ/VL) or "Haswell" (AVX2 + FMA).
// A BLAS without those entry points (a single-architecture OpenBLAS, another BLAS) is left alone.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tapegrad {

struct BlasKernels {
  std::string detected;  // the kernel set OpenBLAS chose when it was loaded, e.g. "Prescott"
  std::string core;      // the kernel set in use now
  bool reselected = false;
};

// Runs the check above once (thread-safe; set_num_threads calls it before any GEMM) and
// returns its outcome.
const BlasKernels& configure_blas_kernels();

// The CPU's vector extensions that OpenBLAS's x86-64 kernel sets need (OS support included).
struct CpuVectorFeatures {
  bool avx2_fma = false;
  bool avx512 = false;  // F, CD, BW, DQ and VL: what OpenBLAS's SkylakeX kernels use
};
CpuVectorFeatures cpu_vector_features();

// The kernel set to select instead of `chosen`, or nothing when `chosen` is right for `cpu`.
// Pure, so the rule is tested on every machine.
std::optional<std::string> better_blas_core(std::string_view chosen, CpuVectorFeatures cpu);

}  // namespace tapegrad
