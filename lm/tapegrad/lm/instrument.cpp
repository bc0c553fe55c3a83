#include "tapegrad/lm/instrument.h"

#include <cmath>

#include "tapegrad/error.h"
#include "tapegrad/vector_sums.h"

namespace tapegrad::lm {

Instrument::Instrument(nn::Decoder<float>& model) {
  const int64_t L = model.config().n_layer;
  for (auto& [name, p] : model.named_parameters()) {
    params_.push_back(p);
    snapshots_.emplace_back(p->shape());
    int layer = -1;
    for (int64_t i = 0; i < L; ++i)
      if (name.rfind("blocks." + std::to_string(i) + ".", 0) == 0) layer = static_cast<int>(i);
    layer_of_.push_back(layer);
    layer_by_param_[p] = layer;
  }
  stats_.layers.resize(static_cast<size_t>(L));
  probe_.blocks.resize(static_cast<size_t>(L));
}

void Instrument::after_backward(std::span<Parameter<float>* const> params, std::span<const double> squares) {
  check(squares.size() == params.size(), "Instrument: ", squares.size(), " sums of squares for ", params.size(),
        " parameters");
  for (auto& l : stats_.layers) l.grad_norm = 0;
  for (size_t k = 0; k < params.size(); ++k) {
    const auto it = layer_by_param_.find(params[k]);
    check(it != layer_by_param_.end(), "Instrument: parameter '", params[k]->name, "' is not the decoder's");
    if (it->second >= 0) stats_.layers[static_cast<size_t>(it->second)].grad_norm += squares[k];
  }
  for (size_t i = 0; i < stats_.layers.size(); ++i) {
    LayerStats& s = stats_.layers[i];
    s.grad_norm = std::sqrt(s.grad_norm);
    s.residual_rms = probe_.blocks[i].residual_rms;
    s.norm_out_rms = probe_.blocks[i].norm_out_rms;
    s.attention_logit = probe_.blocks[i].attention_logit;
  }
  stats_.final_residual_rms = probe_.final_residual_rms;
  stats_.output_logit_mean = probe_.output_logit_mean;
  stats_.output_logit_max = probe_.output_logit_max;
}

// Per parameter, sum w_before^2 while taking the snapshot, and sum (w_after - w_before)^2 after
// the update, each in one pass; layers and the whole model are sums of those. (The element
// counts cancel in the ratio of RMS values.)
void Instrument::before_update() {
  const VectorSumFns& sums = vector_sums();
  base_.assign(stats_.layers.size() + 1, 0.0);  // no allocation after the first step
  for (size_t k = 0; k < params_.size(); ++k)
    base_[slot_of(k)] += sums.copy_sum_squares(snapshots_[k].data(), params_[k]->value().data(), params_[k]->numel());
}

void Instrument::after_update() {
  const VectorSumFns& sums = vector_sums();
  diff_.assign(stats_.layers.size() + 1, 0.0);
  for (size_t k = 0; k < params_.size(); ++k)
    diff_[slot_of(k)] += sums.sum_squared_diff(params_[k]->value().data(), snapshots_[k].data(), params_[k]->numel());
  double all_diff = 0, all_base = 0;
  for (size_t i = 0; i < diff_.size(); ++i) {
    all_diff += diff_[i], all_base += base_[i];
    if (i < stats_.layers.size()) stats_.layers[i].update_ratio = base_[i] > 0 ? std::sqrt(diff_[i] / base_[i]) : 0.0;
  }
  stats_.update_ratio = all_base > 0 ? std::sqrt(all_diff / all_base) : 0.0;
}

}  // namespace tapegrad::lm
