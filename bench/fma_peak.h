// This machine's FMA peak: the FLOP/s of a loop of independent fused multiply-adds that never
// leaves the registers, per vector width and thread count — the ceiling every "fraction of peak"
// in bench/ is measured against, so no fraction rests on a datasheet's figure.
//
// Each thread runs kChains independent accumulators (enough to cover the FMA latency times the
// pipes: 4 cycles x 2 pipes = 8 in flight, 12 leave slack), each step acc = acc * m + c on every
// lane: 2 FLOP per lane per FMA.
#pragma once

#include <cstdint>
#include <vector>

namespace tapegrad::bench {

struct FmaPeak {
  int width_bits = 0;     // 128 (SSE/AVX with FMA), 256 (AVX2 + FMA), 512 (AVX-512F)
  int threads = 0;
  double gflops = 0;      // the best of a few timed runs
};

// The widths this CPU runs FMA at (empty without FMA).
std::vector<int> fma_widths();
// The peak at one width over `threads` threads (OpenMP), timed over about `seconds`.
FmaPeak measure_fma_peak(int width_bits, int threads, double seconds = 0.2);
// GFLOP/s of `loop(iters)` (flop_per_iter each) run on `threads` threads at once: its iteration
// count calibrated on one thread to ~seconds / 3, then the best of 3 timed runs. The FMA and bf16
// probes' shared timing.
double loop_gflops(float (*loop)(int64_t), double flop_per_iter, int threads, double seconds);

// The peak sampled several times while a benchmark runs, so that a fraction of it compares two
// medians taken over the same minutes: on a shared host the FMA loop's rate moves by up to 1.5x
// from one minute to the next (bench/RESULTS.md), and a single probe would measure a moment the
// steps did not run in.
class FmaPeakSampler {
 public:
  explicit FmaPeakSampler(int threads, double seconds_per_width = 0.05);
  void sample();  // one probe at every width
  // The width whose median is highest (a narrower one unless the wider is 2 % faster: a core
  // with one 512-bit FMA unit and two 256-bit ones peaks equally at both), with that median.
  FmaPeak median() const;
  // That width's samples, in the order taken.
  const std::vector<double>& samples(int width_bits) const;

 private:
  int threads_;
  double seconds_;
  std::vector<int> widths_;
  std::vector<std::vector<double>> gflops_;  // per width, per sample
};

}  // namespace tapegrad::bench
