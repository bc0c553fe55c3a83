#include "tapegrad/gemm_bf16.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <vector>

#include "tapegrad/bf16.h"
#include "tapegrad/bf16_operand_cache.h"
#include "tapegrad/error.h"
#include "tapegrad/isa.h"
#include "tapegrad/parallel.h"

namespace tapegrad {

namespace {

std::string_view amx_unavailable_reason() {
  if (active_isa() != Isa::avx512) return "the kernel variant is not avx512 (TAPEGRAD_ISA)";
  if (!detail::gemm_bf16_amx_available())
    return "no AMX-BF16 here (an Intel Xeon from Sapphire Rapids on, under Linux that grants the tile registers)";
  return {};
}

std::string_view unavailable_reason() {
  if (!detail::gemm_bf16_avx512_compiled()) return "this build has no AVX512-BF16 kernels (x86-64 with GCC or Clang only)";
  if (active_isa() != Isa::avx512) return "the kernel variant is not avx512 (TAPEGRAD_ISA)";
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512bf16")) return "this CPU has no AVX512-BF16";
#endif
  return {};
}

// Whether vdpbf16ps outruns the float32 FMA here. AMD's Zen 4 and Zen 5 issue it at the FMA's
// rate with two products per lane (twice the float32 rate); the Intel Xeon measured here issues
// it at a quarter of the FMA's rate (half the float32 flops: bench/RESULTS.md), where the avx512_bf16
// kernels lose to the emulated path. Fixed per CPU, so a process's choice is reproducible.
bool vdpbf16ps_is_faster() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_is("amd");
#else
  return false;
#endif
}

Bf16Kernels initial() {
  const char* forced = std::getenv("TAPEGRAD_BF16_GEMM");
  if (forced == nullptr || *forced == '\0') {
    if (bf16_amx_available()) return Bf16Kernels::kAmx;
    return bf16_avx512_available() && vdpbf16ps_is_faster() ? Bf16Kernels::kAvx512Bf16 : Bf16Kernels::kEmulated;
  }
  return parse_bf16_kernels(forced, "TAPEGRAD_BF16_GEMM");
}

std::atomic<Bf16Kernels>& state() {
  static std::atomic<Bf16Kernels> s{initial()};
  return s;
}

// Rows [r0, r1) of the block at x (leading dimension ld), rounded to bf16 into the same rows of
// out, compact (ld = cols).
// The kernel is looked up by the caller, before any parallel region: a bad TAPEGRAD_ISA is reported
// there (an exception cannot leave an OpenMP region), and once per block rather than per row.
using RoundFn = void (*)(const float*, float*, int64_t);
void round_rows(RoundFn round, float* out, const float* x, int64_t r0, int64_t r1, int64_t cols, int64_t ld) {
  for (int64_t r = r0; r < r1; ++r) round(x + r * ld, out + r * cols, cols);
}

// The whole rows x cols block, rows split over the threads (parallel_for runs inline inside a
// parallel region).
void round_block(float* out, const float* x, int64_t rows, int64_t cols, int64_t ld) {
  const RoundFn round = bf16_rounding().round;
  parallel_for(rows, cols, [&](int64_t r0, int64_t r1) { round_rows(round, out, x, r0, r1, cols, ld); });
}

std::atomic<int64_t> g_rounded_in_gemm{0};

const float* rounded(std::vector<float>& buf, const float* x, int64_t rows, int64_t cols, int64_t ld) {
  g_rounded_in_gemm.fetch_add(1, std::memory_order_relaxed);
  buf.resize(static_cast<size_t>(rows * cols));
  round_block(buf.data(), x, rows, cols, ld);
  return buf.data();
}

}  // namespace

bool bf16_avx512_available() { return unavailable_reason().empty(); }

bool bf16_amx_available() { return amx_unavailable_reason().empty(); }

Bf16Kernels parse_bf16_kernels(std::string_view name, std::string_view what) {
  if (name == "emulated") return Bf16Kernels::kEmulated;
  if (name == "amx") {
    check(bf16_amx_available(), what, " 'amx': unavailable here: ", amx_unavailable_reason());
    return Bf16Kernels::kAmx;
  }
  check(name == "avx512_bf16", what, " '", name, "': unknown bf16 GEMM kernels; known: amx, avx512_bf16, emulated");
  check(bf16_avx512_available(), what, " 'avx512_bf16': unavailable here: ", unavailable_reason());
  return Bf16Kernels::kAvx512Bf16;
}

void set_bf16_kernels(Bf16Kernels k) {
  check(k != Bf16Kernels::kAvx512Bf16 || bf16_avx512_available(), "set_bf16_kernels(kAvx512Bf16): unavailable here: ",
        unavailable_reason());
  check(k != Bf16Kernels::kAmx || bf16_amx_available(), "set_bf16_kernels(kAmx): unavailable here: ",
        amx_unavailable_reason());
  state() = k;
}

Bf16Kernels bf16_kernels() { return state(); }

std::string_view bf16_kernels_name() {
  switch (bf16_kernels()) {
    case Bf16Kernels::kAmx: return "amx";
    case Bf16Kernels::kAvx512Bf16: return "avx512_bf16";
    case Bf16Kernels::kEmulated: break;
  }
  return "emulated";
}

void gemm_bf16(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
               const float* B, int64_t ldb, float beta, float* C, int64_t ldc, Bf16Operands operands) {
  if (M == 0 || N == 0) return;
  const bool b_constant = operands.b_constant;
  switch (state().load(std::memory_order_relaxed)) {
    case Bf16Kernels::kAmx:
      return detail::gemm_bf16_amx(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, b_constant);
    case Bf16Kernels::kAvx512Bf16:
      return detail::gemm_bf16_avx512(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, b_constant);
    case Bf16Kernels::kEmulated: break;
  }
  // Per thread: attention calls this from inside its parallel loop over heads.
  thread_local std::vector<float> a_buf, b_buf;
  const bool at = ta == Trans::kYes, bt = tb == Trans::kYes;
  const int64_t a_rows = at ? K : M, a_cols = at ? M : K;
  const float* a = operands.a_rounded ? A : rounded(a_buf, A, a_rows, a_cols, lda);
  const int64_t a_ld = operands.a_rounded ? lda : a_cols;
  const int64_t b_rows = bt ? N : K, b_cols = bt ? K : N;
  Bf16OperandCache* cache = b_constant && !operands.b_rounded ? bf16_operand_cache() : nullptr;
  const float* b = nullptr;
  int64_t b_ld = b_cols;
  if (operands.b_rounded) {
    b = B;
    b_ld = ldb;
  } else if (cache != nullptr) {
    // The rounded form keeps B's layout, so y = x W^T and dx = dy W share one (not trans-keyed).
    const Bf16OperandKey key{B, ldb, b_rows, b_cols, false, Bf16Form::kRounded};
    const int64_t bytes = b_rows * b_cols * static_cast<int64_t>(sizeof(float));
    // Chunks of rows, ~16k values each: the workers asking at once share the rounding.
    const int64_t rows_per_chunk = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, b_cols));
    const int64_t chunks = (b_rows + rows_per_chunk - 1) / rows_per_chunk;
    const RoundFn round = bf16_rounding().round;  // here: the chunks may run on the pool's threads
    b = static_cast<const float*>(cache->get(key, bytes, chunks, [&](void* out, int64_t c) {
      const int64_t r0 = c * rows_per_chunk;
      round_rows(round, static_cast<float*>(out), B, r0, std::min(b_rows, r0 + rows_per_chunk), b_cols, ldb);
    }));
  } else {
    b = rounded(b_buf, B, b_rows, b_cols, ldb);
  }
  gemm<float>(ta, tb, M, N, K, alpha, a, a_ld, b, b_ld, beta, C, ldc);
}

namespace {
std::atomic<bool>& round_ahead_on() {
  static std::atomic<bool> on{true};
  return on;
}
}  // namespace

bool bf16_rounds_separately() {
  return state().load(std::memory_order_relaxed) == Bf16Kernels::kEmulated && round_ahead_on().load(std::memory_order_relaxed);
}

void set_bf16_round_ahead(bool on) { round_ahead_on() = on; }

int64_t bf16_operands_rounded_in_gemm() { return g_rounded_in_gemm.load(std::memory_order_relaxed); }

template <typename T>
void round_ahead_into(T* dst, const T* src, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    constexpr int64_t kChunk = 4096;
    const auto round = bf16_rounding().round;
    parallel_for((n + kChunk - 1) / kChunk, kChunk, [&](int64_t c0, int64_t c1) {
      const int64_t b = c0 * kChunk, e = std::min(n, c1 * kChunk);
      round(src + b, dst + b, e - b);
    });
  } else {
    check(false, "round_ahead_into: bf16 operands are float32 only");
  }
}

template void round_ahead_into<float>(float*, const float*, int64_t);
template void round_ahead_into<double>(double*, const double*, int64_t);

}  // namespace tapegrad
