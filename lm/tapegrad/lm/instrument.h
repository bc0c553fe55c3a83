// Per-step statistics of a training run — what the lab plots to show how a norm regulates the
// residual stream. All of it is read off values the step computes anyway (a few reductions), plus
// one copy of the weights for the update ratio; buffers are allocated once.
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
#include <unordered_map>
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
  explicit Instrument(nn::Decoder<float>& model);
  nn::DecoderProbe* probe() { return &probe_; }
  // After backward, before clipping: per-layer gradient norms and the forward statistics, from
  // the sums of squares the global norm adds (grad_norm's squares: squares[k] of params[k]).
  void after_backward(std::span<Parameter<float>* const> params, std::span<const double> squares);
  // Around the optimizer step: snapshot, then the update-to-weight ratios.
  void before_update();
  void after_update();
  const StepStats& stats() const { return stats_; }

 private:
  std::vector<Parameter<float>*> params_;
  std::vector<Tensor<float>> snapshots_;  // parallel to params_
  std::vector<int> layer_of_;             // block index of each parameter, -1 outside the blocks
  std::unordered_map<const Parameter<float>*, int> layer_by_param_;  // the same, by parameter
  std::vector<double> diff_, base_;       // per layer (+1 for the rest): sums of squares of the update, of w_before
  // The slot of diff_ and base_ that parameter k adds to.
  size_t slot_of(size_t k) const {
    return layer_of_[k] >= 0 ? static_cast<size_t>(layer_of_[k]) : stats_.layers.size();
  }
  nn::DecoderProbe probe_;
  StepStats stats_;
};

}  // namespace tapegrad::lm
