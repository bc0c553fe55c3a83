#include "tapegrad/lm/divergence.h"

#include <cmath>

#include "tapegrad/error.h"

namespace tapegrad::lm {

std::vector<std::pair<std::string, double>> DivergenceDetector::quantities(const StepResult& r, const StepStats* s) {
  std::vector<std::pair<std::string, double>> q;
  if (s) {
    for (size_t i = 0; i < s->layers.size(); ++i) {
      const std::string b = "blocks." + std::to_string(i) + ".";
      q.emplace_back(b + "residual_rms", s->layers[i].residual_rms);
      q.emplace_back(b + "norm_out_rms", s->layers[i].norm_out_rms);
      q.emplace_back(b + "attention_logit", s->layers[i].attention_logit);
    }
    q.emplace_back("final_residual_rms", s->final_residual_rms);
    q.emplace_back("output_logit_max", s->output_logit_max);
  }
  q.emplace_back("loss", r.loss);
  if (s)
    for (size_t i = s->layers.size(); i-- > 0;) q.emplace_back("blocks." + std::to_string(i) + ".grad_norm", s->layers[i].grad_norm);
  q.emplace_back("grad_norm", r.grad_norm);
  return q;
}

std::optional<Divergence> DivergenceDetector::check(const StepResult& r, const StepStats* stats) {
  const auto q = quantities(r, stats);
  for (const auto& [name, v] : q) {
    if (!std::isfinite(v)) {
      const std::string cause = std::isnan(v) ? "nan" : "inf";
      return Divergence{r.step, cause, name, cat(cause == "nan" ? "NaN" : "Inf", " first in ", name, " at step ", r.step)};
    }
  }
  if (first_.empty()) {
    first_ = q;
    initial_loss_ = ema_ = r.loss;
    return std::nullopt;
  }
  track_spikes(r);
  const bool above = r.step > warmup_ && r.loss > o_.factor * initial_loss_;
  if (!above) above_ = 0;
  else if (above_++ == 0) first_above_ = r.step;
  if (above && above_ >= o_.patience) {
    std::string worst = "loss";
    double growth = r.loss / initial_loss_;
    for (size_t k = 0; k < q.size() && k < first_.size(); ++k) {
      const double before = std::abs(first_[k].second);
      if (q[k].first == "loss" || q[k].first == "grad_norm" || before < 1e-12) continue;
      const double g = std::abs(q[k].second) / before;
      if (g > growth) growth = g, worst = q[k].first;
    }
    return Divergence{first_above_, "loss_explosion", worst,
                      cat("loss above ", o_.factor, " x initial ", initial_loss_, " from step ", first_above_, " for ",
                          above_, " steps (", r.loss, " at step ", r.step, "); largest growth since step 1: ", worst,
                          " (x", growth, ")")};
  }
  return std::nullopt;
}

void DivergenceDetector::track_spikes(const StepResult& r) {
  if (r.step <= warmup_) {
    ema_ = 0.9 * ema_ + 0.1 * r.loss;
    return;
  }
  if (in_spike_) {
    if (r.loss < 1.1 * ema_) in_spike_ = false, ++spikes_;  // recovered: it counts
    return;
  }
  if (r.loss > o_.spike_factor * ema_) {
    in_spike_ = true;
    return;
  }
  ema_ = 0.9 * ema_ + 0.1 * r.loss;
}

}  // namespace tapegrad::lm
