// The step's GEMMs on each library that could run them: OpenBLAS (what tapegrad::gemm calls),
// BLIS (bli_sgemm, its native strided API), libxsmm (JIT kernels, column-major: a row-major
// C = A B is run as C^T = B^T A^T, one call on the whole product), tapegrad's libxsmm path (what
// the step runs with AVX-512: libxsmm's kernels on L2-sized panels of B, W^T transposed a panel at
// a time, OpenBLAS where libxsmm declines; libxsmm_gemm.h) and, for the attention core's
// per-(sequence, head) products, tapegrad's own head kernels where the step runs them. Every GEMM of lm::step_gemms at the shape
// one worker of a batch-split step sees (rows = batch / threads x T), single-threaded, as the
// step runs it; the median of repeated calls over ~0.2 s after a warm-up. Prints a markdown table
// (GFLOP/s per library per GEMM, and each library's time for the whole step's GEMMs).
// BLIS is loaded with dlopen: linked, it would also answer OpenBLAS's cblas_sgemm and sgemm_.
// Every result is checked against a float64 product first; a wrong one is reported, not timed.
//   build/bench/gemm_ab [--dim 128] [--batch 12] [--workers 2]
#include <dlfcn.h>
#include <libxsmm.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tapegrad/gemm.h"
#include "tapegrad/lm/flops.h"
#include "tapegrad/random.h"
#include "tapegrad/threads.h"

using namespace tapegrad;

namespace {

double median_seconds(const std::function<void()>& f) {
  for (int i = 0; i < 3; ++i) f();
  std::vector<double> t;
  const auto start = std::chrono::steady_clock::now();
  while (t.size() < 5 || std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 0.2) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(t.begin(), t.begin() + static_cast<long>(t.size() / 2), t.end());
  return t[t.size() / 2];
}

// Row-major operands of C (M x N) = op(A) op(B), with op(A) M x K and op(B) K x N.
struct Operands {
  int64_t M, N, K;
  bool ta, tb;
  std::vector<float> a, b, c, reference;
  int64_t lda() const { return ta ? M : K; }
  int64_t ldb() const { return tb ? K : N; }
  double at_a(int64_t i, int64_t k) const { return ta ? a[k * M + i] : a[i * K + k]; }
  double at_b(int64_t k, int64_t j) const { return tb ? b[j * K + k] : b[k * N + j]; }
  Operands(const lm::StepGemm& g)
      : M(g.M), N(g.N), K(g.K), ta(g.ta == Trans::kYes), tb(g.tb == Trans::kYes), a(M * K), b(K * N), c(M * N) {
    Rng rng(3);
    for (float& x : a) x = static_cast<float>(rng.normal());
    for (float& x : b) x = static_cast<float>(rng.normal());
  }
  double max_rel_error() const {
    double err = 0, scale = 0;
    for (size_t i = 0; i < c.size(); ++i) err = std::max(err, static_cast<double>(std::abs(c[i] - reference[i]))),
                                          scale = std::max(scale, static_cast<double>(std::abs(reference[i])));
    return err / scale;
  }
};

void openblas(Operands& o) {
  gemm<float>(o.ta ? Trans::kYes : Trans::kNo, o.tb ? Trans::kYes : Trans::kNo, o.M, o.N, o.K, 1.f, o.a.data(), o.lda(),
              o.b.data(), o.ldb(), 0.f, o.c.data(), o.N);
}

// tapegrad::gemm as the step calls it with the libxsmm path on.
void tapegrad_path(Operands& o) {
  set_gemm_kernels(GemmKernels::kLibxsmm);
  openblas(o);
  set_gemm_kernels(GemmKernels::kOpenBlas);
}

// BLIS's typed API (blis.h: trans_t is an enum where BLIS_NO_TRANSPOSE = 0, BLIS_TRANSPOSE = 8).
using BliSgemm = void (*)(int, int, int64_t, int64_t, int64_t, const float*, const float*, int64_t, int64_t, const float*,
                          int64_t, int64_t, const float*, float*, int64_t, int64_t);
BliSgemm bli_sgemm_fn = nullptr;

void blis(Operands& o) {
  const float one = 1.f, zero = 0.f;
  bli_sgemm_fn(o.ta ? 8 : 0, o.tb ? 8 : 0, o.M, o.N, o.K, &one, o.a.data(), o.lda(), 1, o.b.data(), o.ldb(), 1, &zero,
               o.c.data(), o.N, 1);
}

// Column-major view: C^T (N x M) = op(B)^T (N x K) op(A)^T (K x M); a row-major operand read
// column-major is its transpose, so B's transpose flag becomes the first operand's, A's the second's.
std::optional<std::function<void(Operands&)>> xsmm(const Operands& o) {
  const float one = 1.f, zero = 0.f;
  const int flags = (o.tb ? LIBXSMM_GEMM_FLAG_TRANS_A : 0) | (o.ta ? LIBXSMM_GEMM_FLAG_TRANS_B : 0);
  const libxsmm_blasint m = o.N, n = o.M, k = o.K, lda = o.ldb(), ldb = o.lda(), ldc = o.N;
  const libxsmm_smmfunction kernel = libxsmm_smmdispatch(m, n, k, &lda, &ldb, &ldc, &one, &zero, &flags, nullptr);
  if (kernel == nullptr) return std::nullopt;
  return [kernel](Operands& p) { kernel(p.b.data(), p.a.data(), p.c.data()); };
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("The step's GEMMs on OpenBLAS, BLIS and libxsmm, one worker's shapes, 1 thread");
  int64_t dim = 128, batch = 12, workers = 2, layers = 4, heads = 4, ctx = 64;
  app.add_option("--dim", dim)->check(CLI::Range(8, 4096));
  app.add_option("--batch", batch)->check(CLI::Range(1, 4096));
  app.add_option("--workers", workers, "threads the step splits its batch over")->check(CLI::Range(1, 64));
  CLI11_PARSE(app, argc, argv);
  set_num_threads(1);
  set_gemm_kernels(GemmKernels::kOpenBlas);  // the OpenBLAS column is OpenBLAS alone (gemm.h)
  void* blis_lib = dlopen("libblis.so.4", RTLD_NOW | RTLD_LOCAL);
  if (blis_lib != nullptr) {
    bli_sgemm_fn = reinterpret_cast<BliSgemm>(dlsym(blis_lib, "bli_sgemm"));
    if (auto set_threads = reinterpret_cast<void (*)(int64_t)>(dlsym(blis_lib, "bli_thread_set_num_threads"))) set_threads(1);
  }
  if (bli_sgemm_fn == nullptr) std::fprintf(stderr, "gemm_ab: no libblis.so.4 (Debian: libblis4): BLIS not measured\n");
  libxsmm_init();

  nn::DecoderConfig config;
  config.dim = dim, config.layers = layers, config.heads = heads, config.ctx = ctx;
  const int64_t share = std::max<int64_t>(1, batch / workers);
  const auto gemms = lm::step_gemms(config, share, ctx);

  std::printf("One worker's GEMMs of a %lld-thread step, L%lld H%lld C%lld T%lld, batch %lld (%lld per worker), 1 thread each.\n\n",
              static_cast<long long>(workers), static_cast<long long>(layers), static_cast<long long>(heads),
              static_cast<long long>(dim), static_cast<long long>(ctx), static_cast<long long>(batch),
              static_cast<long long>(share));
  std::printf("| GEMM (M, N, K, op) | calls | OpenBLAS GFLOP/s | BLIS | libxsmm | tapegrad (panels) | best |\n"
              "|---|---|---|---|---|---|---|\n");
  std::map<std::string, double> step_s;    // each library's time for all the step's GEMMs it ran
  std::map<std::string, double> common_s;  // and for those every library ran
  bool xsmm_all = true;
  for (const lm::StepGemm& g : gemms) {
    Operands o(g);
    o.reference.assign(o.c.size(), 0.f);
    for (int64_t i = 0; i < g.M; ++i)
      for (int64_t j = 0; j < g.N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < g.K; ++k) acc += o.at_a(i, k) * o.at_b(k, j);
        o.reference[static_cast<size_t>(i * g.N + j)] = static_cast<float>(acc);
      }
    const double flops = 2.0 * static_cast<double>(g.M * g.N * g.K);
    std::map<std::string, double> gf;
    const auto time = [&](const std::string& name, const std::function<void(Operands&)>& f) {
      std::fill(o.c.begin(), o.c.end(), 0.f);
      f(o);
      if (o.max_rel_error() > 1e-4) {
        std::fprintf(stderr, "gemm_ab: %s is wrong on (%lld, %lld, %lld): relative error %.2e\n", name.c_str(),
                     static_cast<long long>(g.M), static_cast<long long>(g.N), static_cast<long long>(g.K), o.max_rel_error());
        return;
      }
      const double s = median_seconds([&] { f(o); });
      gf[name] = flops / s / 1e9;
      step_s[name] += s * static_cast<double>(g.calls);
    };
    time("OpenBLAS", openblas);
    if (bli_sgemm_fn != nullptr) time("BLIS", blis);
    if (const auto k = xsmm(o)) time("libxsmm", *k);
    else xsmm_all = false;
    std::map<std::string, double> seconds;
    for (const auto& [name, v] : gf) seconds[name] = flops / v / 1e9 * static_cast<double>(g.calls);
    if (gf.size() == (bli_sgemm_fn != nullptr ? 3u : 2u))
      for (const auto& [name, sec] : seconds) common_s[name] += sec;
    if (libxsmm_available()) time("tapegrad", tapegrad_path);  // after the common set: it runs every shape
    std::string best;
    for (const auto& [name, v] : gf)
      if (best.empty() || v > gf[best]) best = name;
    const auto cell = [&](const char* name) {
      const auto it = gf.find(name);
      char buf[32];
      std::snprintf(buf, sizeof buf, it == gf.end() ? "n/a" : "%.1f", it == gf.end() ? 0.0 : it->second);
      return std::string(buf);
    };
    std::printf("| %lld x %lld x %lld%s%s%s | %lld | %s | %s | %s | %s | %s |\n", static_cast<long long>(g.M),
                static_cast<long long>(g.N), static_cast<long long>(g.K), g.ta == Trans::kYes ? ", A^T" : "",
                g.tb == Trans::kYes ? ", B^T" : "", g.per_head ? " (per head)" : "", static_cast<long long>(g.calls),
                cell("OpenBLAS").c_str(), cell("BLIS").c_str(), cell("libxsmm").c_str(), cell("tapegrad").c_str(),
                best.c_str());
  }
  std::printf("\nAll the step's GEMMs (one worker): ");
  for (const auto& [name, s] : step_s) std::printf("%s %.2f ms  ", name.c_str(), s * 1e3);
  std::printf("%s\n", xsmm_all ? "" : "(libxsmm: only the shapes it dispatched)");
  std::printf("The GEMMs every library ran: ");
  for (const auto& [name, sec] : common_s) std::printf("%s %.2f ms  ", name.c_str(), sec * 1e3);
  std::printf("\n");
  libxsmm_finalize();
  return 0;
}
