// Where a training step's time goes, on paper: the FLOP model of a Decoder step, and a quick
// measurement of this machine's GEMM throughput to compare it with.
//
// Per token, forward + backward = 3x the forward's multiply-adds (x2 FLOPs each):
//   6 * (matmul weights: per layer qkv 3C^2 + proj C^2 + MLP 2CH (gelu) or 3CH (swiglu); head CV)
//   + 12 * L * T * C   (attention scores q k^T and the weighted sum P v, as computed: full T x T)
// Element-wise work (norms, softmax, GELU, AdamW) is left out: it is memory-bound, not FLOPs.
#pragma once

#include <vector>

#include "tapegrad/gemm.h"
#include "tapegrad/nn/decoder_config.h"

namespace tapegrad::lm {

double flops_per_step(const nn::DecoderConfig& config, int64_t batch, int64_t T);

// GFLOP/s of tapegrad::gemm on a (B*T, 3C, C)-shaped float product with the current threads, at
// the median of its calls over ~0.1 s.
double measure_gemm_gflops(const nn::DecoderConfig& config, int64_t batch, int64_t T);

// The GEMMs of one training step, forward and backward: every Linear's three products (qkv, proj,
// MLP, LM head: out = x W^T, dx = dout W, dW = dout^T x; `calls` = 1) and the attention core's
// six per-(sequence, head) products (S = q k^T, y = P v; dP = dy v^T, dv = P^T dy, dq = dS k,
// dk = dS^T q; `per_head`, `calls` = batch x heads x layers). Their FLOPs,
// 2 M N K x calls, sum to flops_per_step (tested).
struct StepGemm {
  Trans ta, tb;
  int64_t M, N, K, calls;
  bool per_head;
};
std::vector<StepGemm> step_gemms(const nn::DecoderConfig& config, int64_t batch, int64_t T);

// How a training step uses the threads: the batch split across them (lm/batch_parallel.h, what
// Trainer runs) or every op split across them in turn.
enum class StepSplit { kBatch, kOp };

// The GEMM limit of a training step: GFLOP/s of exactly step_gemms, called the way the step calls
// them with the current threads and at the model's precision (bf16: the Linears' products through
// gemm_bf16, the head products float32 as the step runs them) — for kOp the head products one per thread inside a parallel_for
// (through the float head kernels, nn/attention_head_kernels.h, where the step runs them: their
// causal blocks only, the FLOPs still counted as the full products above) and the rest split over
// the threads by tapegrad::gemm; for kBatch each thread runs its share of
// the batch's GEMMs single-threaded, all at once. A step's model FLOP/s over this is the fraction
// of the GEMM limit it reaches. Repeats the step's GEMMs for `seconds` (after one warm-up round)
// and takes the median round, as bench_step takes the median step.
double measure_step_gemm_gflops(const nn::DecoderConfig& config, int64_t batch, int64_t T,
                                StepSplit split = StepSplit::kBatch, double seconds = 0.3);

}  // namespace tapegrad::lm
