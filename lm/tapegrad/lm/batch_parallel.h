// BatchParallelStep: one training step's forward and backward with the batch split across the
// threads — each thread a worker with its own tape, running its share of the sequences through
// the whole model, every kernel single-threaded on that share (ops inside a parallel region run
// inline, GEMMs call OpenBLAS directly). Its gradients go to private buffers (ParamGrads), summed
// into the parameters' .grad() at the end in a fixed order.
//
// Why: at toy sizes a step is hundreds of small kernels. Split op by op, each one forks, waits
// for the slower core and hands data across cores between ops; split by batch, the threads meet
// once per step and each keeps its own activations in its own cache (bench/RESULTS.md: the step
// at C = 64 and 128 against the op-by-op split).
//
// The loss is the batch's mean: worker k's mean over its B_k sequences, seeded with B_k / B, so
// the summed gradient is the full batch's. Determinism: which thread takes which sequences, and
// the order the buffers are summed in, depend only on B and the thread count.
//
// Module hooks run as torch's would: once per module call with the whole batch's tensors, on the
// calling thread, after the workers finish (nn/hook_calls.h).
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <vector>

#include "tapegrad/bf16_operand_cache.h"
#include "tapegrad/nn/decoder.h"
#include "tapegrad/param_grads.h"
#include "tapegrad/tape.h"

namespace tapegrad::lm {

// How the split divides a batch of B sequences: min(num_threads(), B) workers, worker k taking
// sequences [begin, end) = [B k / n, B (k + 1) / n). (lm/flops.h's GEMM limit follows it too.)
int batch_workers(int64_t B);
struct BatchShare {
  int64_t begin, end;
};
BatchShare batch_share(int64_t B, int workers, int k);

template <typename T>
class BatchParallelStep {
 public:
  // The model's forward runs on several threads at once, each on its own sequences and tape:
  // it must keep no state of its own between calls (tapegrad's modules keep none).
  BatchParallelStep(nn::LanguageModel<T>& model, std::vector<Parameter<T>*> params);

  // Forward and backward of the batch (B, T): adds `scale` x d(mean objective)/d(p) into every
  // parameter's .grad() — or, with add false, writes it there (the old contents are ignored, so
  // no zero_grad() is needed first, and the first worker's weight gradients are written by their
  // GEMMs directly: ParamGrads) — and returns the batch's loss terms (cross-entropy and z-loss as the tape's
  // precision T holds them, weighted means over the workers; log Z's mean and minimum). Uses
  // min(num_threads(), B) workers; `probe`, if given, receives the whole batch's statistics
  // (nn::combine_probes; a Decoder's only). A micro-batch of a larger batch passes its share as `scale`.
  CrossEntropyTerms forward_backward(std::span<const int32_t> ids, std::span<const int32_t> targets, int64_t B, int64_t Tn,
                          nn::DecoderProbe* probe = nullptr, double scale = 1.0, bool add = true);

  // Workers used by the last step, and worker k's tape (its part of the last step; profiling).
  int workers() const { return used_; }
  Tape<T>& tape(int k) { return workers_.at(static_cast<size_t>(k))->tape; }
  // The weights' bf16 forms of the step (its fills(): how many were made, one per weight a step).
  const Bf16OperandCache& operand_cache() const { return operand_cache_; }

 private:
  struct Worker {
    Tape<T> tape;
    ParamGrads<T> grads;  // worker 0: the parameters' own .grad(); the others: private buffers
    CrossEntropyTerms terms;
    std::exception_ptr error;
  };
  void ensure_workers(int n);

  nn::LanguageModel<T>& model_;
  nn::Decoder<T>* decoder_;  // the same model when it is a Decoder (probes), else null
  std::vector<Parameter<T>*> params_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<nn::DecoderProbe> probes_;  // worker k's statistics
  std::vector<double> weights_;           // worker k's share of the batch, B_k / B
  // Hook calls collected per worker, run once on the whole batch after the step (hook_calls.h).
  std::vector<nn::HookCalls<T>> hook_calls_;
  Tape<T> hook_tape_;
  // The weights' bf16 forms, made once per step (the parameters hold still until the optimizer runs).
  Bf16OperandCache operand_cache_;
  int used_ = 0;
};

}  // namespace tapegrad::lm
