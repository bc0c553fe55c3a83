#include "tapegrad/lm/instrument.h"

#include <cmath>

#include "tapegrad/error.h"
#include "tapegrad/vector_sums.h"

namespace tapegrad::lm {

Instrument::Instrument(nn::Decoder<float>& model) {
  const int64_t L = model.config().n_layer;
  for (auto& [name, p] : model.named_parameters()) {
    int layer = -1;
    for (int64_t i = 0; i < L; ++i)
      if (name.rfind("blocks." + std::to_string(i) + ".", 0) == 0) layer = static_cast<int>(i);
    layer_by_param_[p] = layer;
  }
  stats_.layers.resize(static_cast<size_t>(L));
  probe_.blocks.resize(static_cast<size_t>(L));
}

int Instrument::layer_of(const Parameter<float>* p) const {
  const auto it = layer_by_param_.find(p);
  check(it != layer_by_param_.end(), "Instrument: parameter '", p->name, "' is not the decoder's");
  return it->second;
}

void Instrument::after_backward(std::span<Parameter<float>* const> params, std::span<const double> squares) {
  check(squares.size() == params.size(), "Instrument: ", squares.size(), " sums of squares for ", params.size(),
        " parameters");
  for (auto& l : stats_.layers) l.grad_norm = 0;
  for (size_t k = 0; k < params.size(); ++k)
    if (const int layer = layer_of(params[k]); layer >= 0) stats_.layers[static_cast<size_t>(layer)].grad_norm += squares[k];
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

// Per parameter, sum w_before^2 before the step and sum (w_after - w_before)^2 from it; layers
// and the whole model are sums of those. (The element counts cancel in the ratio of RMS values.)
std::span<double> Instrument::before_update(std::span<Parameter<float>* const> params) {
  weight_squares_.resize(params.size()), update_squares_.resize(params.size());  // no allocation after the first step
  const VectorSumFns& sums = vector_sums();
  for (size_t k = 0; k < params.size(); ++k) weight_squares_[k] = sums.sum_squares(params[k]->value().data(), params[k]->numel());
  return update_squares_;
}

void Instrument::after_update(std::span<Parameter<float>* const> params) {
  check(params.size() == update_squares_.size(), "Instrument: after_update without before_update");
  base_.assign(stats_.layers.size() + 1, 0.0);
  diff_.assign(stats_.layers.size() + 1, 0.0);
  for (size_t k = 0; k < params.size(); ++k) {
    const size_t slot = slot_of_layer(layer_of(params[k]));
    base_[slot] += weight_squares_[k], diff_[slot] += update_squares_[k];
  }
  double all_diff = 0, all_base = 0;
  for (size_t i = 0; i < diff_.size(); ++i) {
    all_diff += diff_[i], all_base += base_[i];
    if (i < stats_.layers.size()) stats_.layers[i].update_ratio = base_[i] > 0 ? std::sqrt(diff_[i] / base_[i]) : 0.0;
  }
  stats_.update_ratio = all_base > 0 ? std::sqrt(all_diff / all_base) : 0.0;
}

}  // namespace tapegrad::lm
