// bench_step: the whole training step (forward, fused cross-entropy, backward, clip, AdamW) of a
// Decoder, timed the way the PyTorch side (bench/torch_step.py) is: median over steps after a
// warm-up. Also counts heap allocations per step (this program replaces the global operator
// new) and reports peak RSS, so "no allocation per step" and "flat memory" are measured, not
// assumed. Prints one JSON line.
//
//   build/bench/bench_step --threads 2 --norm rmsnorm --steps 100
//   build/bench/bench_step --steps 1000 --rss-every 100     # memory over a long run
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <new>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "allocation_counter.h"
#include "bf16_peak.h"
#include "fma_peak.h"
#include "host_cpu.h"
#include "tapegrad/blas_kernels.h"
#include "tapegrad/error.h"
#include "tapegrad/gemm_bf16.h"
#include "tapegrad/isa.h"
#include "tapegrad/lm/batch_parallel.h"
#include "tapegrad/lm/flops.h"
#include "tapegrad/nn/decoder.h"
#include "tapegrad/optim/adamw.h"
#include "tapegrad/optim/clip.h"
#include "tapegrad/threads.h"

namespace {

// Resident set size now, in MiB (VmRSS), and the peak so far (getrusage).
double rss_mib() {
  std::ifstream in("/proc/self/status");
  std::string key;
  double kb = 0;
  while (in >> key) {
    if (key == "VmRSS:") {
      in >> kb;
      break;
    }
    in.ignore(1 << 20, '\n');
  }
  return kb / 1024.0;
}
double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

int run(int argc, char** argv) {
  using namespace tapegrad;
  CLI::App app{"Time tapegrad's whole training step"};
  nn::DecoderConfig c;  // L4 H4 C128 T64 V65
  std::string norm = "layernorm";
  int64_t batch = 12, steps = 100, warmup = 10, rss_every = 0;
  int threads = 2;
  app.add_option("--norm", norm)->check(CLI::IsMember(nn::norm_names()));
  // Bounds keep every size product (batch x ctx ids, the model's tensors) far from overflow; a
  // model too large for memory still fails below, with one line.
  app.add_option("--layers", c.layers)->check(CLI::Range(1, 1024));
  app.add_option("--heads", c.heads)->check(CLI::Range(1, 65536));
  app.add_option("--dim", c.dim)->check(CLI::Range(1, 65536));
  app.add_option("--ctx", c.ctx)->check(CLI::Range(1, 65536));
  app.add_option("--vocab", c.vocab_size)->check(CLI::Range(1, 1 << 24));
  app.add_option("--batch", batch)->check(CLI::Range(1, 65536));
  app.add_option("--steps", steps, "timed steps")->check(CLI::Range(1, 10'000'000));
  app.add_option("--warmup", warmup, "untimed steps first")->check(CLI::Range(0, 10'000'000));
  app.add_option("--threads", threads, "0: all cores")->check(CLI::Range(0, 1024));
  app.add_option("--rss-every", rss_every, "record RSS every N steps (0: never)")->check(CLI::Range(0, 10'000'000));
  bool profile = false;
  app.add_flag("--profile", profile, "also print where the time goes, per op (tape profiler; with --split batch, worker 0's share)");
  std::string split = "batch";
  app.add_option("--split", split, "how the threads share a step: batch (each its sequences, as Trainer runs) or op (every op split in turn)")
      ->check(CLI::IsMember({"batch", "op"}));
  int64_t peak_probes = 5;
  app.add_option("--peak-probes", peak_probes, "times the FMA peak is sampled among the timed steps, at most one per step (the fraction uses their median)")
      ->check(CLI::Range(1, 1000));
  bool fma_peak = false;
  app.add_flag("--fma-peak", fma_peak, "only measure this machine's FMA peak per vector width, on 1 and --threads threads (JSON lines)");
  std::string precision = "fp32";
  app.add_option("--precision", precision, "fp32, or bf16: the Linears' GEMMs on bfloat16 operands (precision.h); the JSON "
                                           "then names the bf16 kernels and the fraction of the bf16 peak")
      ->check(CLI::IsMember(precision_names()));
  bool gemm_ab = false;
  app.add_flag("--gemm-ab", gemm_ab,
               "alternate the GEMM kernels (libxsmm, openblas; gemm.h) every 4 timed steps and print each one's median and the ratio (JSON)");
  CLI11_PARSE(app, argc, argv);
  if (fma_peak) {
    const int n = threads > 0 ? threads : num_cores();
    for (const int width : bench::fma_widths())
      for (const int t : n > 1 ? std::vector<int>{1, n} : std::vector<int>{1}) {
        const bench::FmaPeak p = bench::measure_fma_peak(width, t);
        std::printf("%s\n", nlohmann::json{{"width_bits", p.width_bits}, {"threads", p.threads}, {"gflops", p.gflops}}.dump().c_str());
      }
    for (const std::string& instruction : bench::bf16_instructions())
      for (const int t : n > 1 ? std::vector<int>{1, n} : std::vector<int>{1}) {
        const bench::Bf16Peak p = bench::measure_bf16_peak(instruction, t);
        std::printf("%s\n", nlohmann::json{{"bf16", p.instruction}, {"threads", p.threads}, {"gflops", p.gflops}}.dump().c_str());
      }
    return 0;
  }
  constexpr int64_t kMaxTokens = int64_t{1} << 24;  // a step of 16M tokens already takes minutes
  check(batch * c.ctx <= kMaxTokens, "--batch ", batch, " x --ctx ", c.ctx, " = ", batch * c.ctx,
        " tokens per step; at most ", kMaxTokens, " are allowed");
  c.norm = nn::NormKind::parse(norm);
  c.precision = parse_precision(precision, "--precision");
  set_num_threads(threads);

  nn::Decoder<float> model(c, 1);
  auto params = model.parameters();
  AdamW<float> opt(params, {.beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8, .weight_decay = 0.1});
  const int64_t T = c.ctx;
  std::vector<int32_t> ids(batch * T), targets(batch * T);
  Rng rng(7);
  const lm::StepSplit step_split = split == "batch" ? lm::StepSplit::kBatch : lm::StepSplit::kOp;
  Tape<float> op_tape;
  op_tape.retain_intermediate_grads(false);  // as BatchParallelStep's workers
  lm::BatchParallelStep<float> batch_step(model, params);
  check(!gemm_ab || libxsmm_available(), "--gemm-ab: libxsmm is unavailable here, nothing to compare");
  check(!gemm_ab || steps >= 8, "--gemm-ab needs --steps of at least 8 (4 with each kernel set), got ", steps);
  std::vector<double> ms, ms_by_kernels[2];  // --gemm-ab: [0] libxsmm, [1] openblas
  ms.reserve(static_cast<size_t>(steps));  // the benchmark itself must not allocate while timing
  for (auto& v : ms_by_kernels) v.reserve(static_cast<size_t>(steps));
  nlohmann::json rss = nlohmann::json::array();
  int64_t allocs_timed = 0;
  double optimizer_ms = 0;
  // The FMA peak is sampled before the first timed step and then every steps/probes steps; the
  // step after a probe is run untimed, so no timed step starts from the probe's caches.
  bench::FmaPeakSampler peak(num_threads());
  const int64_t probe_every = std::max<int64_t>(1, steps / peak_probes);
  int64_t probes = 0;
  Tape<float>& profiled = step_split == lm::StepSplit::kBatch ? batch_step.tape(0) : op_tape;
  const auto forward_backward = [&] {
    if (step_split == lm::StepSplit::kBatch) {
      batch_step.forward_backward(ids, targets, batch, T, nullptr, 1.0, /*add=*/false);  // as Trainer: no zero_grad()
    } else {
      opt.zero_grad();
      op_tape.clear();
      op_tape.backward(model.forward(op_tape, ids, batch, T, targets).loss);
    }
  };
  for (int64_t i = 0; i < warmup + steps; ++i) {
    if (!gemm_ab && i >= warmup && (i - warmup) % probe_every == 0 && probes < peak_probes) {
      peak.sample();
      ++probes;
      profiled.set_profiling(false);
      forward_backward();
      opt.step(1e-3, clip_factor(grad_norm<float>(params), 1.0));
    }
    profiled.set_profiling(profile && i >= warmup);
    for (auto& v : ids) v = static_cast<int32_t>(rng.below(c.vocab_size));
    for (auto& v : targets) v = static_cast<int32_t>(rng.below(c.vocab_size));
    const int kernels = static_cast<int>(i / 4 % 2);
    if (gemm_ab) set_gemm_kernels(kernels == 0 ? GemmKernels::kLibxsmm : GemmKernels::kOpenBlas);
    const int64_t a0 = alloc_counter::allocations();
    const auto t0 = std::chrono::steady_clock::now();
    forward_backward();
    const auto t1 = std::chrono::steady_clock::now();
    opt.step(1e-3, clip_factor(grad_norm<float>(params), 1.0));
    if (i >= warmup) optimizer_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
    const double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (i >= warmup) {
      allocs_timed += alloc_counter::allocations() - a0;
      ms.push_back(t);
      ms_by_kernels[kernels].push_back(t);
    }
    if (rss_every > 0 && (i + 1) % rss_every == 0) rss.push_back({{"step", i + 1}, {"rss_mib", rss_mib()}});
  }
  if (gemm_ab) {
    for (auto& v : ms_by_kernels) std::sort(v.begin(), v.end());
    const double a = ms_by_kernels[0][ms_by_kernels[0].size() / 2], b = ms_by_kernels[1][ms_by_kernels[1].size() / 2];
    std::printf("%s\n", nlohmann::json{{"dim", c.dim}, {"threads", threads}, {"kernel_variant", std::string(isa_name(active_isa()))},
                                       {"libxsmm_median_ms", a}, {"openblas_median_ms", b}, {"libxsmm_over_openblas", a / b}}
                            .dump()
                            .c_str());
    return 0;
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  const double flops = lm::flops_per_step(model.config(), batch, T);
  // The GEMM limit: exactly this step's GEMMs, called as the step calls them (lm/flops.h).
  const double gemm = lm::measure_step_gemm_gflops(model.config(), batch, T, step_split);
  const double qkv_gemm = lm::measure_gemm_gflops(model.config(), batch, T);
  // The ceiling: FMA at the fastest vector width the CPU has, on the step's threads, the median
  // of the samples taken between the steps (fma_peak.h).
  const bench::FmaPeak fma = peak.median();
  const double fma_peak_gflops = fma.gflops;
  const int fma_peak_width_bits = fma.width_bits;
  const bench::HostCpu cpu = bench::host_cpu();
  nlohmann::json j = {{"impl", "tapegrad"},
                      {"cpu", cpu.brand},
                      {"cpu_vendor", cpu.vendor},
                      {"cpu_family", cpu.family},
                      {"cpu_model", cpu.model},
                      {"threads", threads},
                      {"kernel_variant", std::string(isa_name(active_isa()))},
                      {"norm", norm},
                      {"layers", c.layers},
                      {"heads", c.heads},
                      {"dim", c.dim},
                      {"ctx", c.ctx},
                      {"batch", batch},
                      {"vocab", c.vocab_size},
                      {"split", split},
                      {"blas_core", configure_blas_kernels().core},
                      {"gemm_kernels", std::string(gemm_kernels_name())},
                      {"precision", precision},
                      {"median_ms", median},
                      {"min_ms", sorted.front()},
                      {"p90_ms", sorted[sorted.size() * 9 / 10]},
                      {"steps", steps},
                      {"gflop_per_step", flops / 1e9},
                      {"gflops_per_s", flops / (median / 1000) / 1e9},
                      {"gemm_gflops", gemm},
                      {"qkv_gemm_gflops", qkv_gemm},
                      {"fraction_of_gemm_peak", flops / (median / 1000) / 1e9 / gemm},
                      {"fma_peak_gflops", fma_peak_gflops},
                      {"fma_peak_width_bits", fma_peak_width_bits},
                      {"fma_peak_samples", fma_peak_width_bits ? peak.samples(fma_peak_width_bits) : std::vector<double>{}},
                      {"fraction_of_fma_peak", fma_peak_gflops > 0 ? flops / (median / 1000) / 1e9 / fma_peak_gflops : 0.0},
                      {"allocations_per_step", static_cast<double>(allocs_timed) / static_cast<double>(steps)},
                      {"rss_mib", rss_mib()},
                      {"peak_rss_mib", peak_rss_mib()}};
  if (c.precision == Precision::kBf16) {
    // The bf16 ceiling: the fastest bf16 instruction's loop on the step's threads, measured once
    // after the steps (bf16_peak.h). A CPU without bf16 instructions has no such ceiling: both
    // fields are null there (the emulated path's GEMMs are float32 ones: fraction_of_fma_peak).
    j["bf16_kernels"] = std::string(bf16_kernels_name());
    double best = 0;
    for (const std::string& instruction : bench::bf16_instructions())
      best = std::max(best, bench::measure_bf16_peak(instruction, num_threads(), 0.1).gflops);
    j["bf16_peak_gflops"] = best > 0 ? nlohmann::json(best) : nlohmann::json(nullptr);
    j["fraction_of_bf16_peak"] =
        best > 0 ? nlohmann::json(flops / (median / 1000) / 1e9 / best) : nlohmann::json(nullptr);
  }
  if (!rss.empty()) j["rss"] = rss;
  std::printf("%s\n", j.dump().c_str());
  if (profile) {
    const double n = static_cast<double>(steps);
    double fwd = 0, bwd = 0;
    std::fprintf(stderr, "%-24s %8s %11s %11s\n", "op (per step)", "calls", "forward ms", "backward ms");
    for (const auto& t : profiled.profile()) {
      std::fprintf(stderr, "%-24s %8.0f %11.3f %11.3f\n", t.op, t.calls / n, t.forward_ms / n, t.backward_ms / n);
      fwd += t.forward_ms / n, bwd += t.backward_ms / n;
    }
    std::fprintf(stderr, "%-24s %8s %11.3f %11.3f\n%-24s %8s %11.3f\n", "total", "", fwd, bwd, "clip + AdamW", "",
                 optimizer_ms / n);
  }
  return 0;
}

}  // namespace

// Bad sizes the flags allow together (heads not dividing dim, say) or a model too large for
// memory: one line naming the cause, not an uncaught exception.
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "bench_step: not enough memory for this configuration\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_step: %s\n", e.what());
    return 1;
  }
}
