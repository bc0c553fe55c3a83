// The mixed-precision GEMM: C = alpha * bf16(op(A)) * bf16(op(B)) + beta * C, float32 in and out,
// the operands rounded to bfloat16 (bf16.h) and every product summed in float32 — what
// torch.autocast's bf16 matmul and llm.c's bf16 GEMMs compute, except that C stays float32 (no
// rounding of the output; the next op reads it at full precision). A bf16 product is exact in
// float32 (8 x 8 significant bits), so the paths differ only in the order of the float32 sums.
//
// Three kernel paths, chosen at run time:
//   amx       Intel AMX tiles (tdpbf16ps, gemm_bf16_amx.cpp): 32 x 32 blocks of C in four tiles.
//   avx512_bf16  AVX512-BF16 (vdpbf16ps: two bf16 products per float32 lane and instruction), own
//             micro-kernels: operands packed (rounded once) into k-pair-interleaved panels, a 12x32
//             tile of C in 24 registers. Each element of C is summed by one thread in a fixed
//             order (k-pairs in blocks of kKBlock): same bits for any thread count.
//   emulated  the operands rounded into float32 buffers and multiplied by the float32 GEMM
//             (gemm.h): for CPUs without AVX512-BF16, and for A/B.
// The default: amx where the CPU has it, else avx512_bf16 where the CPU has AVX512-BF16 and vdpbf16ps
// is the faster instruction (AMD Zen 4/5; not the Intel Xeon measured in bench/RESULTS.md, which
// issues it at a quarter of the FMA's rate), else emulated; always emulated unless the kernel
// variant (isa.h) is avx512. TAPEGRAD_BF16_GEMM=amx|avx512_bf16|emulated chooses at start (a path
// unavailable here: an error saying why). Fixed per process and CPU: same seed, same bits.
// The two agree to float32 round-off of the sums, not bitwise (tests/lib/test_gemm_bf16.cpp).
//
// Bf16Operands: what the caller knows of its operands. None of it changes the result.
//   b_constant  B holds still for the caller's step (a Linear's weight), so its rounded or packed form
//               may come from the thread's operand cache (bf16_operand_cache.h) when one is in use.
//   a_rounded, b_rounded  the operand already holds bf16 values (round_bf16(x) == x: the caller
//               rounded it once for several GEMMs, or its producer wrote it rounded), so the
//               emulated path multiplies it as it is instead of rounding a copy. The packing paths
//               round while they pack (idempotent on such values) and ignore it.
// bf16_rounds_separately() says whether rounding ahead pays: on the emulated path each operand
// costs a pass of its own over memory, so an operand that two GEMMs read, or that a kernel can
// round while the values are still in cache, is cheaper rounded once by its caller (round_ahead,
// below: nn/linear.cpp, nn/mlp.cpp, nn/attention.cpp and ops/matmul.cpp do); on the packing paths
// the caller's pass would be pure cost.
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>

#include "tapegrad/gemm.h"
#include "tapegrad/precision.h"

namespace tapegrad {

struct Bf16Operands {
  bool a_rounded = false;
  bool b_rounded = false;
  bool b_constant = false;
};

void gemm_bf16(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
               const float* B, int64_t ldb, float beta, float* C, int64_t ldc, Bf16Operands operands = {});

// Whether callers should round ahead (see above): the emulated path is active and rounding ahead
// is on. set_bf16_round_ahead(false) makes every caller leave the rounding to each GEMM, as on the
// packing paths: the same bits (rounding is idempotent), the reference the modules' tests hold the
// round-ahead path to, bit for bit.
bool bf16_rounds_separately();
void set_bf16_round_ahead(bool on);

// Whether an op at precision p should round an operand that two of its GEMMs read (or that it has
// in cache) once itself: bf16 on the emulated path with rounding ahead on; never for double.
template <typename T>
bool round_ahead(Precision p) {
  if constexpr (std::is_same_v<T, float>) return p == Precision::kBf16 && bf16_rounds_separately();
  return false;
}

// dst[i] = round_bf16(src[i]) for n values (bf16.h); dst may be src. Split over the threads (inline
// inside a parallel region). float only (round_ahead<double> is false; for double it throws).
template <typename T>
void round_ahead_into(T* dst, const T* src, int64_t n);

// How many operands the emulated path has rounded inside a GEMM call — neither marked rounded by
// the caller nor taken from an operand cache — since the process started. A training step's ops
// round each operand once, ahead, so a step that adds to it holds an op that rounds an operand at
// every GEMM that reads it (tests/examples/test_batch_parallel.cpp).
int64_t bf16_operands_rounded_in_gemm();

// gemm<T> at precision p: the bf16 GEMM for float with p = kBf16, gemm<T> otherwise (double always).
template <typename T>
void gemm_at(Precision p, Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
             const T* B, int64_t ldb, T beta, T* C, int64_t ldc, Bf16Operands operands = {}) {
  if constexpr (std::is_same_v<T, float>) {
    if (p == Precision::kBf16) return gemm_bf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, operands);
  }
  gemm<T>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// gemm_batched<T> at precision p (the bf16 batch runs one product after another, each threaded).
template <typename T>
void gemm_batched_at(Precision p, int64_t batch, Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, T alpha,
                     const T* A, int64_t lda, int64_t stride_a, const T* B, int64_t ldb, int64_t stride_b, T beta, T* C,
                     int64_t ldc, int64_t stride_c, Bf16Operands operands = {}) {
  if constexpr (std::is_same_v<T, float>) {
    if (p == Precision::kBf16) {
      for (int64_t i = 0; i < batch; ++i)
        gemm_bf16(ta, tb, M, N, K, alpha, A + i * stride_a, lda, B + i * stride_b, ldb, beta, C + i * stride_c, ldc,
                  operands);
      return;
    }
  }
  gemm_batched<T>(batch, ta, tb, M, N, K, alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc, stride_c);
}

enum class Bf16Kernels { kEmulated, kAvx512Bf16, kAmx };
void set_bf16_kernels(Bf16Kernels k);
Bf16Kernels bf16_kernels();
// Whether kAvx512Bf16 can run here (an x86-64 build, the avx512 variant active, a CPU with AVX512-BF16).
bool bf16_avx512_available();
// Whether kAmx can run here (an x86-64 Linux build, the avx512 variant active, AMX-BF16 granted).
bool bf16_amx_available();
Bf16Kernels parse_bf16_kernels(std::string_view name, std::string_view what);
std::string_view bf16_kernels_name();  // "amx" | "avx512_bf16" | "emulated"

namespace detail {
// The AVX512-BF16 path (gemm_bf16_avx512.cpp); single call, threads inside.
void gemm_bf16_avx512(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                      int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc, bool b_constant);
bool gemm_bf16_avx512_compiled();
// The AMX path (gemm_bf16_amx.cpp); available: the build has it, the CPU has AMX-BF16 and the OS
// granted the tile registers.
void gemm_bf16_amx(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                   const float* B, int64_t ldb, float beta, float* C, int64_t ldc, bool b_constant);
bool gemm_bf16_amx_available();
}  // namespace detail

}  // namespace tapegrad
