#include "tapegrad/lm/flops.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <tuple>
#include <vector>

#include "tapegrad/error.h"
#include "tapegrad/gemm_bf16.h"
#include "tapegrad/lm/batch_parallel.h"
#include "tapegrad/nn/attention_head_kernels.h"
#include "tapegrad/nn/mlp.h"
#include "tapegrad/parallel.h"
#include "tapegrad/threads.h"

namespace tapegrad::lm {

double flops_per_step(const nn::DecoderConfig& c, int64_t batch, int64_t T) {
  const double C = static_cast<double>(c.dim), L = static_cast<double>(c.layers);
  const double H = static_cast<double>(c.mlp_hidden ? c.mlp_hidden : c.mlp.default_hidden(c.dim));
  const double mlp = static_cast<double>(c.mlp.entry().input_maps + 1) * C * H;
  const double weights = L * (4.0 * C * C + mlp) + C * static_cast<double>(c.vocab_size);
  const double per_token = 6.0 * weights + 12.0 * L * static_cast<double>(T) * C;
  return per_token * static_cast<double>(batch * T);
}

namespace {
// GFLOP/s of `run` (`flops` each) at its median time, over calls repeated for at least `seconds`
// (and at least 3) after one warm-up call. The median, as bench_step times the step: a mean over
// the calls would count the ones a noisy machine disturbed, and flatter the step's fraction.
template <typename Run>
double gflops(const Run& run, double flops, double seconds) {
  run();  // warm caches and threads
  std::vector<double> times;
  const auto start = std::chrono::steady_clock::now();
  while (times.size() < 3 || std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2), times.end());
  return flops / times[times.size() / 2] / 1e9;
}
}  // namespace

double measure_gemm_gflops(const nn::DecoderConfig& c, int64_t batch, int64_t T) {
  const int64_t M = batch * T, N = 3 * c.dim, K = c.dim;
  std::vector<float> a(M * K, 0.5f), b(N * K, 0.25f), out(M * N);
  const auto run = [&] { gemm<float>(Trans::kNo, Trans::kYes, M, N, K, 1.f, a.data(), K, b.data(), K, 0.f, out.data(), N); };
  return gflops(run, 2.0 * static_cast<double>(M * N * K), 0.1);
}

std::vector<StepGemm> step_gemms(const nn::DecoderConfig& c, int64_t batch, int64_t T) {
  const int64_t BT = batch * T, C = c.dim, V = c.vocab_size, NH = c.heads, HS = C / NH;
  const int64_t H = c.mlp_hidden ? c.mlp_hidden : c.mlp.default_hidden(c.dim);
  const int64_t fc_width = c.mlp.entry().input_maps * H;  // SwiGLU: gate and up in one GEMM
  std::vector<StepGemm> g;
  const auto linear = [&](int64_t in, int64_t out) {  // over BT rows: forward, then dx and dW
    g.push_back({Trans::kNo, Trans::kYes, BT, out, in, 1, false});
    g.push_back({Trans::kNo, Trans::kNo, BT, in, out, 1, false});
    g.push_back({Trans::kYes, Trans::kNo, out, in, BT, 1, false});
  };
  for (int64_t l = 0; l < c.layers; ++l) linear(C, 3 * C), linear(C, C), linear(C, fc_width), linear(H, C);
  linear(C, V);  // the LM head (tied or not: the same products)
  const int64_t heads = batch * NH * c.layers;
  for (const auto& [ta, tb, M, N, K] : std::vector<std::tuple<Trans, Trans, int64_t, int64_t, int64_t>>{
           {Trans::kNo, Trans::kYes, T, T, HS}, {Trans::kNo, Trans::kNo, T, HS, T},   // S = q k^T, y = P v
           {Trans::kNo, Trans::kYes, T, T, HS}, {Trans::kYes, Trans::kNo, T, HS, T},  // dP = dy v^T, dv = P^T dy
           {Trans::kNo, Trans::kNo, T, HS, T},  {Trans::kYes, Trans::kNo, T, HS, T}})  // dq = dS k, dk = dS^T q
    g.push_back({ta, tb, M, N, K, heads, true});
  return g;
}

namespace {

// Operands for one list of step GEMMs, each list its own (as each worker of a batch split has its
// own activations): one buffer per operand as large as the largest product needs, and one head's
// operands and result (T x max(T, HS) each) per OpenMP thread number, as the attention core has
// (a worker of a batch split is thread k of the split's region, and indexes tile k).
struct GemmBuffers {
  std::vector<float> a, b, out, ha, hb, hc;
  int64_t tile = 0;
  std::vector<float> head;  // with the head kernels: one head's operands, results and scratch per thread
  int64_t head_tile = 0;
};

GemmBuffers buffers_for(const std::vector<StepGemm>& gemms, int64_t T, int64_t HS) {
  const int threads = num_threads();
  int64_t most = 0;
  for (const StepGemm& s : gemms)
    if (!s.per_head) most = std::max({most, s.M * s.K, s.K * s.N, s.M * s.N});
  GemmBuffers b;
  b.a.assign(static_cast<size_t>(most), 0.5f), b.b.assign(static_cast<size_t>(most), 0.25f);
  b.out.resize(static_cast<size_t>(most));
  b.tile = T * std::max(T, HS);
  b.ha.assign(static_cast<size_t>(threads * b.tile), 0.5f), b.hb = b.ha, b.hc = b.ha;
  if (nn::head_kernels_support(HS)) {
    // q, k, v, dy, y, dq, dk, dv (T x HS each), P, S, dP (T x T each), the kernels' scratch.
    b.head_tile = 8 * T * HS + 3 * T * T + nn::head_forward_scratch(T, HS);
    b.head.assign(static_cast<size_t>(threads * b.head_tile), 0.5f);
  }
  return b;
}

// Runs `gemms` as the step runs them: each Linear's products through tapegrad::gemm (split over
// the threads, or single-threaded inside a parallel region), the head products one (sequence,
// head) per index of a parallel_for, layer by layer.
void run_step_gemms(const std::vector<StepGemm>& gemms, const nn::DecoderConfig& c, int64_t batch, int64_t T,
                    GemmBuffers& buf) {
  const int64_t HS = c.dim / c.heads;
  for (const StepGemm& s : gemms) {
    if (s.per_head) continue;
    const int64_t lda = s.ta == Trans::kNo ? s.K : s.M, ldb = s.tb == Trans::kNo ? s.N : s.K;
    gemm_at<float>(c.precision, s.ta, s.tb, s.M, s.N, s.K, 1.f, buf.a.data(), lda, buf.b.data(), ldb, 0.f,
                   buf.out.data(), s.N);
  }
  for (int64_t l = 0; l < c.layers; ++l)
    parallel_for(batch * c.heads, 2 * 6 * T * T * HS, [&](int64_t bh0, int64_t bh1) {
      if (buf.head_tile > 0) {  // the float step runs the six products through the head kernels
        float* h = buf.head.data() + omp_get_thread_num() * buf.head_tile;
        float *q = h, *k = q + T * HS, *v = k + T * HS, *dy = v + T * HS, *y = dy + T * HS, *dq = y + T * HS, *dk = dq + T * HS,
              *dv = dk + T * HS, *P = dv + T * HS, *S = P + T * T, *dP = S + T * T, *scratch = dP + T * T;
        for (int64_t bh = bh0; bh < bh1; ++bh) nn::head_products(S, y, dP, dq, dk, dv, q, k, v, dy, P, HS, T, HS, 1.f, scratch);
        return;
      }
      const int64_t t = omp_get_thread_num() * buf.tile;
      for (int64_t bh = bh0; bh < bh1; ++bh)
        for (const StepGemm& s : gemms) {
          if (!s.per_head) continue;
          const int64_t lda = s.ta == Trans::kNo ? s.K : s.M, ldb = s.tb == Trans::kNo ? s.N : s.K;
          gemm<float>(s.ta, s.tb, s.M, s.N, s.K, 1.f, buf.ha.data() + t, lda, buf.hb.data() + t, ldb, 0.f,
                      buf.hc.data() + t, s.N);
        }
    });
}

}  // namespace

double measure_step_gemm_gflops(const nn::DecoderConfig& c, int64_t batch, int64_t T, StepSplit split,
                                double seconds) {
  const int64_t HS = c.dim / c.heads;
  const double flops = flops_per_step(c, batch, T);
  const int workers = split == StepSplit::kBatch ? batch_workers(batch) : 1;
  if (workers <= 1) {
    const std::vector<StepGemm> gemms = step_gemms(c, batch, T);
    GemmBuffers buf = buffers_for(gemms, T, HS);
    return gflops([&] { run_step_gemms(gemms, c, batch, T, buf); }, flops, seconds);
  }
  // The batch split (lm/batch_parallel.h): worker k runs its share's GEMMs on one thread, all
  // workers at once.
  struct Worker {
    int64_t sequences;
    std::vector<StepGemm> gemms;
    GemmBuffers buf;
  };
  std::vector<Worker> w;
  for (int k = 0; k < workers; ++k) {
    const BatchShare s = batch_share(batch, workers, k);
    std::vector<StepGemm> gemms = step_gemms(c, s.end - s.begin, T);
    GemmBuffers buf = buffers_for(gemms, T, HS);
    w.push_back({s.end - s.begin, std::move(gemms), std::move(buf)});
  }
  return gflops(
      [&] {
#pragma omp parallel num_threads(workers)
        {
          Worker& mine = w[static_cast<size_t>(omp_get_thread_num())];
          run_step_gemms(mine.gemms, c, mine.sequences, T, mine.buf);
        }
      },
      flops, seconds);
}

}  // namespace tapegrad::lm
