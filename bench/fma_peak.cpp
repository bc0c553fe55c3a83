#include "fma_peak.h"

#include <omp.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "tapegrad/error.h"

namespace tapegrad::bench {
namespace {

constexpr int kChains = 12;

#if defined(__x86_64__)
// One thread's loop at one width: `iters` rounds of kChains FMAs. The target attribute lets the
// intrinsics of that width compile in an otherwise baseline build; the lanes are summed and
// returned so the loop cannot be removed.
#define TAPEGRAD_FMA_LOOP(name, target_isa, V, set1, fmadd, store, lanes)              \
  __attribute__((target(target_isa))) float name(int64_t iters) {                     \
    V acc[kChains];                                                                   \
    for (int k = 0; k < kChains; ++k) acc[k] = set1(0.001f * static_cast<float>(k));  \
    const V m = set1(0.999999f), c = set1(1e-7f);                                     \
    for (int64_t i = 0; i < iters; ++i)                                               \
      for (int k = 0; k < kChains; ++k) acc[k] = fmadd(acc[k], m, c);                 \
    float sum = 0, out[lanes];                                                        \
    for (int k = 0; k < kChains; ++k) {                                               \
      store(out, acc[k]);                                                             \
      for (int l = 0; l < (lanes); ++l) sum += out[l];                                \
    }                                                                                 \
    return sum;                                                                       \
  }
TAPEGRAD_FMA_LOOP(fma_loop_128, "fma", __m128, _mm_set1_ps, _mm_fmadd_ps, _mm_storeu_ps, 4)
TAPEGRAD_FMA_LOOP(fma_loop_256, "avx2,fma", __m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_storeu_ps, 8)
TAPEGRAD_FMA_LOOP(fma_loop_512, "avx512f", __m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_storeu_ps, 16)
#undef TAPEGRAD_FMA_LOOP
#endif

}  // namespace

std::vector<int> fma_widths() {
  std::vector<int> out;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("fma")) out.push_back(128);
  if (__builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2")) out.push_back(256);
  if (__builtin_cpu_supports("avx512f")) out.push_back(512);
#endif
  return out;
}

FmaPeak measure_fma_peak(int width_bits, int threads, double seconds) {
  const std::vector<int> widths = fma_widths();
  check(std::find(widths.begin(), widths.end(), width_bits) != widths.end(), "measure_fma_peak: this CPU has no ",
        width_bits, "-bit FMA");
  check(threads >= 1, "measure_fma_peak: threads must be >= 1, got ", threads);
#if defined(__x86_64__)
  const auto loop = width_bits == 512 ? fma_loop_512 : width_bits == 256 ? fma_loop_256 : fma_loop_128;
#else
  float (*loop)(int64_t) = [](int64_t) { return 0.f; };  // unreachable: no widths off x86-64
#endif
  return {width_bits, threads, loop_gflops(loop, 2.0 * kChains * (width_bits / 32), threads, seconds)};
}

double loop_gflops(float (*loop)(int64_t), double flop_per_iter, int threads, double seconds) {
  // Calibrate on one thread, then time all threads together, keeping the best of 3 runs.
  int64_t iters = 1 << 12;
  volatile float sink = 0;
  for (;;) {
    const auto t0 = std::chrono::steady_clock::now();
    sink = sink + loop(iters);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > seconds / 8 || iters > (int64_t{1} << 40)) {
      iters = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(iters) * seconds / 3 / std::max(s, 1e-9)));
      break;
    }
    iters *= 4;
  }
  double best = 0;
  for (int run = 0; run < 3; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
    { sink = sink + loop(iters); }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, flop_per_iter * static_cast<double>(iters) * threads / s / 1e9);
  }
  return best;
}

FmaPeakSampler::FmaPeakSampler(int threads, double seconds_per_width)
    : threads_(threads), seconds_(seconds_per_width), widths_(fma_widths()), gflops_(widths_.size()) {}

void FmaPeakSampler::sample() {
  for (size_t w = 0; w < widths_.size(); ++w) gflops_[w].push_back(measure_fma_peak(widths_[w], threads_, seconds_).gflops);
}

FmaPeak FmaPeakSampler::median() const {
  FmaPeak best{0, threads_, 0};
  for (size_t w = 0; w < widths_.size(); ++w) {
    if (gflops_[w].empty()) continue;
    std::vector<double> v = gflops_[w];
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    const double m = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    if (m > best.gflops * 1.02) best.width_bits = widths_[w], best.gflops = m;
  }
  return best;
}

const std::vector<double>& FmaPeakSampler::samples(int width_bits) const {
  const auto it = std::find(widths_.begin(), widths_.end(), width_bits);
  check(it != widths_.end(), "FmaPeakSampler: no ", width_bits, "-bit FMA sampled");
  return gflops_[static_cast<size_t>(it - widths_.begin())];
}

}  // namespace tapegrad::bench
