// Micro-benchmarks of tapegrad's kernels, forward + backward through the tape (what a training
// step runs), with throughput counters:
//   bytes_per_second   for memory-bound kernels (norms, embedding, AdamW), from the minimum bytes
//                      they must move; compare with BM_triad, the machine's streaming bandwidth
//   FLOPS              for the compute-bound ones (attention, MLP), from their FLOP count
//
//   build/bench/bench_kernels --benchmark_min_time=0.2
//   build/bench/bench_kernels --benchmark_filter='norm|triad'
#include <benchmark/benchmark.h>

#include <vector>

#include "tapegrad/nn/attention.h"
#include "tapegrad/nn/linear.h"
#include "tapegrad/nn/layernorm.h"
#include "tapegrad/nn/mlp.h"
#include "tapegrad/nn/rmsnorm.h"
#include "tapegrad/ops/cross_entropy.h"
#include "tapegrad/ops/add.h"
#include "tapegrad/ops/embedding.h"
#include "tapegrad/ops/gelu.h"
#include "tapegrad/optim/adamw.h"
#include "tapegrad/parallel.h"
#include "tapegrad/threads.h"

namespace {
using namespace tapegrad;

Parameter<float> param(const char* name, Shape shape, uint64_t seed, double std = 1.0) {
  Rng rng(seed);
  return Parameter<float>(name, Tensor<float>::randn(shape, rng, std));
}

// a[i] = b[i] + s * c[i] over arrays far larger than the caches: STREAM's triad, the bandwidth
// a memory-bound kernel can hope for. 3 arrays x 4 bytes move per element.
void BM_triad(benchmark::State& st) {
  set_num_threads(static_cast<int>(st.range(0)));
  const int64_t n = int64_t{1} << 24;  // 64 MiB per array
  std::vector<float> a(n), b(n, 1.f), c(n, 2.f);
  for (auto _ : st) {
    parallel_for(n, 1, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) a[i] = b[i] + 3.f * c[i];
    });
    benchmark::DoNotOptimize(a.data());
  }
  st.SetBytesProcessed(st.iterations() * 3 * n * 4);
}
BENCHMARK(BM_triad)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime()->Unit(benchmark::kMillisecond);

// Norm forward + backward at (rows, C) on `threads` threads. Minimum traffic: forward reads x,
// writes y; backward reads dy and x, reads and writes dx: 6 tensors of rows x C floats.
template <bool kRms>
void run_norm(benchmark::State& st, int threads, int64_t rows, int64_t C) {
  set_num_threads(threads);
  Parameter<float> x = param("x", {rows, C}, 1), w = param("w", {C}, 2), b = param("b", {C}, 3);
  const Tensor<float> dy = param("dy", {rows, C}, 4).value();
  Tape<float> tape;
  for (auto _ : st) {
    tape.clear();
    Var<float> y = kRms ? nn::rms_norm(tape.param(x), tape.param(w)) : nn::layer_norm(tape.param(x), tape.param(w), tape.param(b));
    tape.backward(y, dy.view());
  }
  st.SetBytesProcessed(st.iterations() * 6 * rows * C * 4);
}
// (4096, 768) on range(0) threads.
template <bool kRms>
void BM_norm(benchmark::State& st) {
  run_norm<kRms>(st, static_cast<int>(st.range(0)), 4096, 768);
}
// One batch-split worker's share of the default step (6 sequences of 64 positions, so 384 rows)
// on one thread, C = range(0).
template <bool kRms>
void BM_norm_toy(benchmark::State& st) {
  run_norm<kRms>(st, 1, 384, st.range(0));
}
BENCHMARK_TEMPLATE(BM_norm, false)->Name("BM_layernorm_fwd_bwd/4096x768")->Arg(1)->Arg(2)->ArgName("threads")
    ->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_norm, true)->Name("BM_rmsnorm_fwd_bwd/4096x768")->Arg(1)->Arg(2)->ArgName("threads")
    ->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_norm_toy, false)->Name("BM_layernorm_fwd_bwd/toy/384rows")->Arg(64)->Arg(128)->ArgName("C")
    ->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_norm_toy, true)->Name("BM_rmsnorm_fwd_bwd/toy/384rows")->Arg(64)->Arg(128)->ArgName("C")
    ->UseRealTime()->Unit(benchmark::kMicrosecond);

// Causal attention (with its projections) forward + backward; B=4, C=128, NH=4, T from range(0).
// FLOPs: projections 2*B*T*(3C*C + C*C)*3 (fwd + 2x bwd) + core 2*2*B*T*T*C*3.
void BM_attention(benchmark::State& st) {
  set_num_threads(2);
  const int64_t B = 4, T = st.range(0), C = 128, NH = 4;
  Parameter<float> x = param("x", {B, T, C}, 1), wq = param("wq", {3 * C, C}, 2, 0.02), wp = param("wp", {C, C}, 3, 0.02);
  Parameter<float> bq = param("bq", {3 * C}, 4, 0.0), bp = param("bp", {C}, 5, 0.0);
  const Tensor<float> dy = param("dy", {B, T, C}, 6).value();
  Tape<float> tape;
  for (auto _ : st) {
    tape.clear();
    Var<float> y = nn::causal_self_attention(tape.param(x), tape.param(wq), tape.param(wp), tape.param(bq),
                                             tape.param(bp), NH);
    tape.backward(y, dy.view());
  }
  const double flops = 3.0 * (2.0 * B * T * 4 * C * C + 4.0 * B * T * T * C);
  st.counters["FLOPS"] = benchmark::Counter(flops * st.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_attention)->RangeMultiplier(2)->Range(32, 512)->ArgName("T")->UseRealTime()->Unit(benchmark::kMillisecond);

// The attention core alone (the six head products and the causal softmax, forward + backward),
// one batch-split worker's share of the toy step (6 sequences x 4 heads, T = 64) on one thread,
// heads of range(0) features; range(1): 0 the float head kernels (attention_head_kernels.h), 1
// the GEMM path they replaced. FLOPs: the full T x T products, as the model counts them.
void BM_attention_core(benchmark::State& st) {
  set_num_threads(1);
  const int64_t HS = st.range(0), NH = 4, C = NH * HS, B = 6, T = 64;
  const nn::AttentionDims d{B, T, C, NH};
  const Tensor<float> qkv = param("qkv", {B, T, 3 * C}, 1).value(), dy = param("dy", {B, T, C}, 2).value();
  std::vector<float> att(static_cast<size_t>(B * NH * T * T)), y(static_cast<size_t>(B * T * C)),
      dqkv(static_cast<size_t>(B * T * 3 * C));
  std::vector<float> scratch(static_cast<size_t>(std::max<int64_t>(
      {nn::attention_core_scratch<float>(d, false), nn::attention_core_scratch<float>(d, true), T * T})));
  const bool gemm_path = st.range(1) != 0;
  for (auto _ : st) {
    if (gemm_path) {
      nn::attention_core_forward_reference(att.data(), y.data(), qkv.data(), d);
      nn::attention_core_backward_reference(dqkv.data(), scratch.data(), dy.data(), qkv.data(), att.data(), d);
    } else {
      nn::attention_core_forward(att.data(), y.data(), qkv.data(), d, scratch.data());
      nn::attention_core_backward(dqkv.data(), scratch.data(), dy.data(), qkv.data(), att.data(), d);
    }
    benchmark::DoNotOptimize(dqkv.data());
  }
  const double flops = 6.0 * 2.0 * B * NH * T * T * HS;
  st.counters["FLOPS"] = benchmark::Counter(flops * st.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_attention_core)->ArgsProduct({{16, 32, 64}, {0, 1}})->ArgNames({"HS", "gemm_path"})->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// The same with QK-norm (range(1): 0 RMSNorm, 1 LayerNorm): its cost over BM_attention at equal T
// is the gather/normalise/scatter of q and k, forward and backward. FLOPs counted as above.
void BM_attention_qk_norm(benchmark::State& st) {
  set_num_threads(2);
  const int64_t B = 4, T = st.range(0), C = 128, NH = 4, HS = C / NH;
  Parameter<float> x = param("x", {B, T, C}, 1), wq = param("wq", {3 * C, C}, 2, 0.02), wp = param("wp", {C, C}, 3, 0.02);
  Parameter<float> bq = param("bq", {3 * C}, 4, 0.0), bp = param("bp", {C}, 5, 0.0);
  Parameter<float> gq = param("gq", {HS}, 7, 0.0), gk = param("gk", {HS}, 8, 0.0);
  const Tensor<float> dy = param("dy", {B, T, C}, 6).value();
  Tape<float> tape;
  for (auto _ : st) {
    tape.clear();
    nn::QKNormInputs<float> qk;
    qk.kernels = nn::NormKind::parse(st.range(1) == 0 ? "rmsnorm" : "layernorm").entry().row_kernels<float>();
    qk.q_weight = tape.param(gq), qk.k_weight = tape.param(gk);
    Var<float> y = nn::causal_self_attention(tape.param(x), tape.param(wq), tape.param(wp), tape.param(bq),
                                             tape.param(bp), NH, static_cast<float*>(nullptr), qk);
    tape.backward(y, dy.view());
  }
  const double flops = 3.0 * (2.0 * B * T * 4 * C * C + 4.0 * B * T * T * C);
  st.counters["FLOPS"] = benchmark::Counter(flops * st.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_attention_qk_norm)->ArgsProduct({{64, 256}, {0, 1}})->ArgNames({"T", "layernorm"})->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Fused softmax + cross-entropy forward + backward over (768, V).
void BM_cross_entropy(benchmark::State& st) {
  set_num_threads(2);
  const int64_t N = 768, V = st.range(0);
  Parameter<float> z = param("z", {N, V}, 1);
  std::vector<int32_t> t(N);
  for (int64_t i = 0; i < N; ++i) t[i] = static_cast<int32_t>(i % V);
  Tape<float> tape;
  for (auto _ : st) {
    tape.clear();
    tape.backward(cross_entropy(tape.param(z), t));
  }
  st.SetBytesProcessed(st.iterations() * 3 * N * V * 4);
}
BENCHMARK(BM_cross_entropy)->Arg(65)->Arg(4096)->ArgName("V")->UseRealTime()->Unit(benchmark::kMicrosecond);

// MLP forward + backward, rows = 768, C = 128; GELU (H = 512) or SwiGLU (H = 344).
template <nn::MlpActivation kKind>
void BM_mlp(benchmark::State& st) {
  set_num_threads(2);
  const int64_t rows = 768, C = 128, H = nn::default_mlp_hidden(C, kKind), width = kKind == nn::MlpActivation::kGelu ? H : 2 * H;
  Parameter<float> x = param("x", {rows, C}, 1), wf = param("wf", {width, C}, 2, 0.02), wp = param("wp", {C, H}, 3, 0.02);
  Parameter<float> bf = param("bf", {width}, 4, 0.0), bp = param("bp", {C}, 5, 0.0);
  const Tensor<float> dy = param("dy", {rows, C}, 6).value();
  Tape<float> tape;
  for (auto _ : st) {
    tape.clear();
    Var<float> y = nn::mlp(tape.param(x), tape.param(wf), tape.param(wp), tape.param(bf), tape.param(bp), kKind);
    tape.backward(y, dy.view());
  }
  const double flops = 3.0 * 2.0 * rows * C * (width + H);
  st.counters["FLOPS"] = benchmark::Counter(flops * st.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK_TEMPLATE(BM_mlp, nn::MlpActivation::kGelu)->Name("BM_mlp_gelu_fwd_bwd")->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_mlp, nn::MlpActivation::kSwiGLU)->Name("BM_mlp_swiglu_fwd_bwd")->UseRealTime()->Unit(benchmark::kMicrosecond);

// The MLP forward's parts on one worker's rows (384 of the C128 step's 768), one thread: the
// fc product with and without its bias (copied into the output, then beta = 1), and GELU on the
// 384 x 512 hidden activations. Their sum against BM_mlp's forward share says what lies outside
// the GEMMs.
void BM_linear_fwd(benchmark::State& st) {
  set_num_threads(1);
  const int64_t rows = 384, in = 128, out = 512;
  const Tensor<float> x = param("x", {rows, in}, 1).value(), w = param("w", {out, in}, 2, 0.02).value();
  const Tensor<float> b = param("b", {out}, 3).value();
  std::vector<float> y(rows * out);
  for (auto _ : st) {
    nn::linear_forward(y.data(), x.data(), w.data(), st.range(0) ? b.data() : nullptr, rows, in, out);
    benchmark::DoNotOptimize(y.data());
  }
  st.counters["FLOPS"] = benchmark::Counter(2.0 * rows * in * out * st.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_linear_fwd)->Arg(0)->Arg(1)->ArgName("bias")->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_gelu_fwd(benchmark::State& st) {
  set_num_threads(1);
  const int64_t n = 384 * 512;
  const Tensor<float> x = param("x", {n}, 1).value();
  std::vector<float> y(n);
  for (auto _ : st) {
    gelu_forward(y.data(), x.data(), n);
    benchmark::DoNotOptimize(y.data());
  }
  st.SetBytesProcessed(st.iterations() * 2 * n * 4);
}
BENCHMARK(BM_gelu_fwd)->UseRealTime()->Unit(benchmark::kMicrosecond);

// Token embedding gather + scatter-add backward, (B*T = 768 tokens, V = 65, C = 128).
void BM_embedding(benchmark::State& st) {
  set_num_threads(2);
  const int64_t N = 768, V = 65, C = 128;
  Parameter<float> w = param("w", {V, C}, 1);
  std::vector<int32_t> ids(N);
  for (int64_t i = 0; i < N; ++i) ids[i] = static_cast<int32_t>((i * 7) % V);
  const Tensor<float> dy = param("dy", {N, C}, 2).value();
  Tape<float> tape;
  for (auto _ : st) {
    tape.clear();
    tape.backward(embedding(tape.param(w), ids, {N}), dy.view());
  }
  st.SetBytesProcessed(st.iterations() * 2 * N * C * 4);
}
BENCHMARK(BM_embedding)->UseRealTime()->Unit(benchmark::kMicrosecond);

// AdamW over 0.8 M parameters (the L4 C128 model): reads w, g, m, v; writes w, m, v.
// measured 0: step(); 1: step_measured(), the update sizes summed inside the update pass; 2: the
// Optimizer default's copy of the weights around step() and a pass over both after it.
void BM_adamw(benchmark::State& st) {
  set_num_threads(static_cast<int>(st.range(0)));
  Parameter<float> w = param("w", {800, 1024}, 1);
  w.grad() = param("g", {800, 1024}, 2).value();
  AdamW<float> opt({&w});
  std::vector<double> squares(1);
  for (auto _ : st) {
    if (st.range(1) == 0) opt.step(1e-3);
    else if (st.range(1) == 1) opt.step_measured(1e-3, 1.0, squares);
    else opt.Optimizer<float>::step_measured(1e-3, 1.0, squares);
  }
  st.SetBytesProcessed(st.iterations() * 7 * w.numel() * 4);
}
BENCHMARK(BM_adamw)
    ->ArgsProduct({{1, 2}, {0, 1, 2}})
    ->ArgNames({"threads", "measured"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// A bias's gradient, db[c] += sum_r dy[r, c] (ops/add.h's bias_backward): the qkv projection's
// of one worker's half of the C128 step's batch, 384 rows x 384 columns, on one thread.
void BM_bias_backward(benchmark::State& st) {
  set_num_threads(1);
  const int64_t rows = 384, cols = 384;
  const Tensor<float> dy = param("dy", {rows, cols}, 1).value();
  std::vector<float> db(cols);
  for (auto _ : st) {
    bias_backward(db.data(), dy.data(), rows, cols);
    benchmark::DoNotOptimize(db.data());
  }
  st.SetBytesProcessed(st.iterations() * rows * cols * 4);
}
BENCHMARK(BM_bias_backward)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
