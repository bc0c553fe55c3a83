// Per-step statistics of a training run — what the lab plots to show how a norm regulates the
// residual stream. All of it is read off values the step computes anyway (a few reductions; the
// update sizes from the optimizer's own pass where it takes them); buffers are allocated once.
//
//   per layer i (block i):
//     residual_rms   RMS of the residual stream entering block i ("scale drift")
//     norm_out_rms   RMS of what its attention reads: Norm1(X) in pre-norm — the correction
//     attention_logit largest attention logit <q, k> / sqrt(HS) in block i
//     grad_norm      L2 norm of the gradients of block i's parameters (before clipping)
//     update_ratio   RMS(w_after - w_before) / RMS(w_before) over block i's parameters
//   whole model: the residual stream after the last block, output-logit mean and max, and the
//   update ratio over every parameter.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "tapegrad/nn/decoder.h"

namespace tapegrad::lm {

struct LayerStats {
  double residual_rms = 0, norm_out_rms = 0, attention_logit = 0, grad_norm = 0, update_ratio = 0;
};

struct StepStats {
  std::vector<LayerStats> layers;
  double final_residual_rms = 0, output_logit_mean = 0, output_logit_max = 0, update_ratio = 0;
};

class Instrument {
 public:
  // `params`: the parameters the trainer's gradient norm and optimizer go through, in their
  // order (every one the decoder's); the per-parameter sums below are in that order.
  Instrument(nn::Decoder<float>& model, std::span<Parameter<float>* const> params);
  nn::DecoderProbe* probe() { return &probe_; }
  // After backward, before clipping: per-layer gradient norms and the forward statistics, from
  // the sums of squares the global norm adds (grad_norm's squares: squares[k] of params[k]).
  void after_backward(std::span<const double> squares);
  // Around the optimizer step: |w_before|^2 per parameter, returning where
  // Optimizer::step_measured is to write the update sizes; then the update-to-weight ratios.
  std::span<double> before_update();
  void after_update();
  const StepStats& stats() const { return stats_; }

 private:
  std::vector<Parameter<float>*> params_;
  std::vector<size_t> slot_;  // per parameter: its block's index, stats_.layers.size() outside the blocks
  std::vector<double> weight_squares_, update_squares_;  // per parameter: |w_before|^2, |w_after - w_before|^2
  std::vector<double> diff_, base_;  // per slot: sums of squares of the update, of w_before
  nn::DecoderProbe probe_;
  StepStats stats_;
};

}  // namespace tapegrad::lm
