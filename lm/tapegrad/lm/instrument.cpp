#include "tapegrad/lm/instrument.h"

#include <cmath>
#include <optional>

#include "tapegrad/error.h"
#include "tapegrad/vector_sums.h"

namespace tapegrad::lm {

Instrument::Instrument(nn::Decoder<float>& model, std::span<Parameter<float>* const> params)
    : params_(params.begin(), params.end()), weight_squares_(params.size()), update_squares_(params.size()) {
  const int64_t L = model.config().layers;
  stats_.layers.resize(static_cast<size_t>(L));
  probe_.blocks.resize(static_cast<size_t>(L));
  const auto named = model.named_parameters();
  for (const Parameter<float>* p : params_) {
    std::optional<size_t> slot;
    for (const auto& [name, q] : named) {
      if (q != p) continue;
      slot = stats_.layers.size();
      for (int64_t i = 0; i < L; ++i)
        if (name.rfind("blocks." + std::to_string(i) + ".", 0) == 0) slot = static_cast<size_t>(i);
    }
    check(slot.has_value(), "Instrument: parameter '", p->name, "' is not the decoder's");
    slot_.push_back(*slot);
  }
}

void Instrument::after_backward(std::span<const double> squares) {
  check(squares.size() == params_.size(), "Instrument: ", squares.size(), " sums of squares for ", params_.size(),
        " parameters");
  for (auto& l : stats_.layers) l.grad_norm = 0;
  for (size_t k = 0; k < params_.size(); ++k)
    if (slot_[k] < stats_.layers.size()) stats_.layers[slot_[k]].grad_norm += squares[k];
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
std::span<double> Instrument::before_update() {
  const VectorSumFns& sums = vector_sums();
  for (size_t k = 0; k < params_.size(); ++k)
    weight_squares_[k] = sums.sum_squares(params_[k]->value().data(), params_[k]->numel());
  return update_squares_;
}

void Instrument::after_update() {
  base_.assign(stats_.layers.size() + 1, 0.0);  // no allocation after the first step
  diff_.assign(stats_.layers.size() + 1, 0.0);
  for (size_t k = 0; k < params_.size(); ++k) base_[slot_[k]] += weight_squares_[k], diff_[slot_[k]] += update_squares_[k];
  double all_diff = 0, all_base = 0;
  for (size_t i = 0; i < diff_.size(); ++i) {
    all_diff += diff_[i], all_base += base_[i];
    if (i < stats_.layers.size()) stats_.layers[i].update_ratio = base_[i] > 0 ? std::sqrt(diff_[i] / base_[i]) : 0.0;
  }
  stats_.update_ratio = all_base > 0 ? std::sqrt(all_diff / all_base) : 0.0;
}

}  // namespace tapegrad::lm
