#include "tapegrad/lm/flops.h"

#include <chrono>
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

double measure_step_gemm_gflops(const nn::DecoderConfig& c, int64_t batch, int64_t T) {
  check(c.mlp == nn::MlpKind::kGelu, "measure_step_gemm_gflops: the GELU MLP's shapes only");
  const int64_t BT = batch * T, C = c.dim, V = c.vocab_size, NH = c.n_head, HS = C / NH;
  const int64_t H = c.mlp_hidden ? c.mlp_hidden : nn::default_mlp_hidden(c.dim, c.mlp);
  struct Shape {
    Trans ta, tb;
    int64_t M, N, K;
  };
  // One Linear (in -> out) over BT rows: forward, then backward's dx and dW.
  std::vector<Shape> split;  // run by tapegrad::gemm over all threads
  const auto linear = [&](int64_t in, int64_t out) {
    split.push_back({Trans::kNo, Trans::kYes, BT, out, in});
    split.push_back({Trans::kNo, Trans::kNo, BT, in, out});
    split.push_back({Trans::kYes, Trans::kNo, out, in, BT});
  };
  for (int64_t l = 0; l < c.n_layer; ++l) linear(C, 3 * C), linear(C, C), linear(C, H), linear(H, C);
  linear(C, V);  // the LM head (tied or not: the same products)
  // Per (sequence, head): forward S = q k^T (T, T, HS) and y = P v (T, HS, T); backward dP = dy v^T,
  // dv = P^T dy, dq = dS k, dk = dS^T q.
  const std::vector<Shape> head = {{Trans::kNo, Trans::kYes, T, T, HS}, {Trans::kNo, Trans::kNo, T, HS, T},
                                   {Trans::kNo, Trans::kYes, T, T, HS}, {Trans::kYes, Trans::kNo, T, HS, T},
                                   {Trans::kNo, Trans::kNo, T, HS, T},  {Trans::kYes, Trans::kNo, T, HS, T}};
  int64_t most = 0;
  double flops = 0;
  for (const Shape& s : split) most = std::max({most, s.M * s.K, s.K * s.N, s.M * s.N}), flops += 2.0 * s.M * s.N * s.K;
  for (const Shape& s : head) flops += 2.0 * s.M * s.N * s.K * static_cast<double>(batch * NH * c.n_layer);
  std::vector<float> a(static_cast<size_t>(most), 0.5f), b(static_cast<size_t>(most), 0.25f), out(static_cast<size_t>(most));
  // Per thread, one head's operands and result (T x max(T, HS) each), as the attention core has.
  const int64_t tile = T * std::max(T, HS);
  std::vector<float> ha(static_cast<size_t>(num_threads() * tile), 0.5f), hb(ha), hc(ha);
  const auto run = [&] {
    for (const Shape& s : split) {
      const int64_t lda = s.ta == Trans::kNo ? s.K : s.M, ldb = s.tb == Trans::kNo ? s.N : s.K;
      gemm<float>(s.ta, s.tb, s.M, s.N, s.K, 1.f, a.data(), lda, b.data(), ldb, 0.f, out.data(), s.N);
    }
    for (int64_t l = 0; l < c.n_layer; ++l)
      parallel_for(batch * NH, 2 * 6 * T * T * HS, [&](int64_t bh0, int64_t bh1) {
        const int64_t t = omp_get_thread_num() * tile;
        for (int64_t bh = bh0; bh < bh1; ++bh)
          for (const Shape& s : head) {
            const int64_t lda = s.ta == Trans::kNo ? s.K : s.M, ldb = s.tb == Trans::kNo ? s.N : s.K;
            gemm<float>(s.ta, s.tb, s.M, s.N, s.K, 1.f, ha.data() + t, lda, hb.data() + t, ldb, 0.f, hc.data() + t, s.N);
          }
      });
  };
  return gflops(run, flops, 0.3);
}

}  // namespace tapegrad::lm
