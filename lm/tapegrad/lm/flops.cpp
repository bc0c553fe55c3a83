#include "tapegrad/lm/flops.h"

#include <algorithm>
#include <chrono>
#include <tuple>
#include <vector>

#include "tapegrad/error.h"
#include "tapegrad/gemm.h"
#include "tapegrad/nn/mlp.h"
#include "tapegrad/parallel.h"
#include "tapegrad/threads.h"

namespace tapegrad::lm {

double flops_per_step(const nn::DecoderConfig& c, int64_t batch, int64_t T) {
  const double C = static_cast<double>(c.dim), L = static_cast<double>(c.n_layer);
  const double H = static_cast<double>(c.mlp_hidden ? c.mlp_hidden : nn::default_mlp_hidden(c.dim, c.mlp));
  const double mlp = (c.mlp == nn::MlpKind::kGelu ? 2.0 : 3.0) * C * H;
  const double weights = L * (4.0 * C * C + mlp) + C * static_cast<double>(c.vocab_size);
  const double per_token = 6.0 * weights + 12.0 * L * static_cast<double>(T) * C;
  return per_token * static_cast<double>(batch * T);
}

namespace {
// GFLOP/s of `run` (`flops` each), repeated for at least `seconds` after one warm-up call.
template <typename Run>
double gflops(const Run& run, double flops, double seconds) {
  run();  // warm caches and threads
  int reps = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    run();
    ++reps;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return flops * reps / elapsed / 1e9;
}
}  // namespace

double measure_gemm_gflops(const nn::DecoderConfig& c, int64_t batch, int64_t T) {
  const int64_t M = batch * T, N = 3 * c.dim, K = c.dim;
  std::vector<float> a(M * K, 0.5f), b(N * K, 0.25f), out(M * N);
  const auto run = [&] { gemm<float>(Trans::kNo, Trans::kYes, M, N, K, 1.f, a.data(), K, b.data(), K, 0.f, out.data(), N); };
  return gflops(run, 2.0 * static_cast<double>(M * N * K), 0.1);
}

std::vector<StepGemm> step_gemms(const nn::DecoderConfig& c, int64_t batch, int64_t T) {
  check(c.mlp == nn::MlpKind::kGelu, "step_gemms: the GELU MLP's shapes only");
  const int64_t BT = batch * T, C = c.dim, V = c.vocab_size, NH = c.n_head, HS = C / NH;
  const int64_t H = c.mlp_hidden ? c.mlp_hidden : nn::default_mlp_hidden(c.dim, c.mlp);
  std::vector<StepGemm> g;
  const auto linear = [&](int64_t in, int64_t out) {  // over BT rows: forward, then dx and dW
    g.push_back({Trans::kNo, Trans::kYes, BT, out, in, 1, false});
    g.push_back({Trans::kNo, Trans::kNo, BT, in, out, 1, false});
    g.push_back({Trans::kYes, Trans::kNo, out, in, BT, 1, false});
  };
  for (int64_t l = 0; l < c.n_layer; ++l) linear(C, 3 * C), linear(C, C), linear(C, H), linear(H, C);
  linear(C, V);  // the LM head (tied or not: the same products)
  const int64_t heads = batch * NH * c.n_layer;
  for (const auto& [ta, tb, M, N, K] : std::vector<std::tuple<Trans, Trans, int64_t, int64_t, int64_t>>{
           {Trans::kNo, Trans::kYes, T, T, HS}, {Trans::kNo, Trans::kNo, T, HS, T},   // S = q k^T, y = P v
           {Trans::kNo, Trans::kYes, T, T, HS}, {Trans::kYes, Trans::kNo, T, HS, T},  // dP = dy v^T, dv = P^T dy
           {Trans::kNo, Trans::kNo, T, HS, T},  {Trans::kYes, Trans::kNo, T, HS, T}})  // dq = dS k, dk = dS^T q
    g.push_back({ta, tb, M, N, K, heads, true});
  return g;
}

double measure_step_gemm_gflops(const nn::DecoderConfig& c, int64_t batch, int64_t T) {
  const std::vector<StepGemm> all = step_gemms(c, batch, T);
  const int64_t HS = c.dim / c.n_head;
  std::vector<StepGemm> split, head;
  int64_t most = 0;
  double flops = 0;
  for (const StepGemm& s : all) {
    (s.per_head ? head : split).push_back(s);
    if (!s.per_head) most = std::max({most, s.M * s.K, s.K * s.N, s.M * s.N});
    flops += 2.0 * static_cast<double>(s.M * s.N * s.K) * static_cast<double>(s.calls);
  }
  std::vector<float> a(static_cast<size_t>(most), 0.5f), b(static_cast<size_t>(most), 0.25f), out(static_cast<size_t>(most));
  // Per thread, one head's operands and result (T x max(T, HS) each), as the attention core has.
  const int64_t tile = T * std::max(T, HS);
  std::vector<float> ha(static_cast<size_t>(num_threads() * tile), 0.5f), hb(ha), hc(ha);
  const auto run = [&] {
    for (const StepGemm& s : split) {
      const int64_t lda = s.ta == Trans::kNo ? s.K : s.M, ldb = s.tb == Trans::kNo ? s.N : s.K;
      gemm<float>(s.ta, s.tb, s.M, s.N, s.K, 1.f, a.data(), lda, b.data(), ldb, 0.f, out.data(), s.N);
    }
    for (int64_t l = 0; l < c.n_layer; ++l)  // as the attention core: one head per index, per thread
      parallel_for(batch * c.n_head, 2 * 6 * T * T * HS, [&](int64_t bh0, int64_t bh1) {
        const int64_t t = omp_get_thread_num() * tile;
        for (int64_t bh = bh0; bh < bh1; ++bh)
          for (const StepGemm& s : head) {
            const int64_t lda = s.ta == Trans::kNo ? s.K : s.M, ldb = s.tb == Trans::kNo ? s.N : s.K;
            gemm<float>(s.ta, s.tb, s.M, s.N, s.K, 1.f, ha.data() + t, lda, hb.data() + t, ldb, 0.f, hc.data() + t, s.N);
          }
      });
  };
  return gflops(run, flops, 0.3);
}

}  // namespace tapegrad::lm
