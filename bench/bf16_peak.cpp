#include "bf16_peak.h"

#include <omp.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "tapegrad/error.h"
#include "fma_peak.h"
#include "tapegrad/gemm_bf16.h"

namespace tapegrad::bench {
namespace {

#if defined(__x86_64__) && defined(__GNUC__) && __GNUC__ >= 11
constexpr int kChains = 12;

__attribute__((target("avx512f,avx512bf16"))) float dp_loop(int64_t iters) {
  __m512 acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm512_set1_ps(0.001f * static_cast<float>(k));
  const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f803f80), b = (__m512bh)_mm512_set1_epi32(0x33803380);
  for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 12
    for (int k = 0; k < kChains; ++k) acc[k] = _mm512_dpbf16_ps(acc[k], a, b);
  float sum = 0, lanes[16];
  for (int k = 0; k < kChains; ++k) {
    _mm512_storeu_ps(lanes, acc[k]);
    for (float v : lanes) sum += v;
  }
  return sum;
}

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

__attribute__((target("amx-tile,amx-bf16"))) float amx_loop(int64_t iters) {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) cfg.colsb[t] = 64, cfg.rows[t] = 16;
  _tile_loadconfig(&cfg);
  alignas(64) uint16_t ab[16 * 32];
  std::fill(std::begin(ab), std::end(ab), uint16_t{0x3380});
  alignas(64) float out[16 * 16];
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, ab, 64);
  _tile_loadd(5, ab, 64);
  _tile_loadd(6, ab, 64);
  _tile_loadd(7, ab, 64);
  for (int64_t i = 0; i < iters; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, out, 64);
  return out[0];
}
#endif

}  // namespace

std::vector<std::string> bf16_instructions() {
  std::vector<std::string> out;
#if defined(__x86_64__) && defined(__GNUC__) && __GNUC__ >= 11
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && bf16_avx512_available()) out.push_back("avx512_bf16");
  if (bf16_amx_available()) out.push_back("amx");
#endif
  return out;
}

Bf16Peak measure_bf16_peak(const std::string& instruction, int threads, double seconds) {
  const std::vector<std::string> have = bf16_instructions();
  check(std::find(have.begin(), have.end(), instruction) != have.end(), "measure_bf16_peak: this CPU does not run ",
        instruction);
  check(threads >= 1, "measure_bf16_peak: threads must be >= 1, got ", threads);
#if defined(__x86_64__) && defined(__GNUC__) && __GNUC__ >= 11
  const bool amx = instruction == "amx";
  float (*loop)(int64_t) = amx ? amx_loop : dp_loop;
  const double flop_per_iter = amx ? 4.0 * 16 * 16 * 32 * 2 : 2.0 * kChains * 32;
#else
  float (*loop)(int64_t) = [](int64_t) { return 0.f; };
  const double flop_per_iter = 0;
#endif
  return {instruction, threads, loop_gflops(loop, flop_per_iter, threads, seconds)};
}

}  // namespace tapegrad::bench
