#include "tapegrad/lm/flops.h"

#include <chrono>
#include <vector>

#include "tapegrad/gemm.h"
#include "tapegrad/nn/mlp.h"

namespace tapegrad::lm {

double flops_per_step(const nn::DecoderConfig& c, int64_t batch, int64_t T) {
  const double C = static_cast<double>(c.dim), L = static_cast<double>(c.n_layer);
  const double H = static_cast<double>(c.mlp_hidden ? c.mlp_hidden : nn::default_mlp_hidden(c.dim, c.mlp));
  const double mlp = (c.mlp == nn::MlpKind::kGelu ? 2.0 : 3.0) * C * H;
  const double weights = L * (4.0 * C * C + mlp) + C * static_cast<double>(c.vocab_size);
  const double per_token = 6.0 * weights + 12.0 * L * static_cast<double>(T) * C;
  return per_token * static_cast<double>(batch * T);
}

double measure_gemm_gflops(const nn::DecoderConfig& c, int64_t batch, int64_t T) {
  const int64_t M = batch * T, N = 3 * c.dim, K = c.dim;
  std::vector<float> a(M * K, 0.5f), b(N * K, 0.25f), out(M * N);
  const auto run = [&] { gemm<float>(Trans::kNo, Trans::kYes, M, N, K, 1.f, a.data(), K, b.data(), K, 0.f, out.data(), N); };
  run();  // warm caches and threads
  int reps = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < 0.1) {
    run();
    ++reps;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return 2.0 * static_cast<double>(M * N * K) * reps / elapsed / 1e9;
}

}  // namespace tapegrad::lm
