#include "tapegrad/lm/step_record.h"

#include <cmath>

namespace tapegrad::lm {

nlohmann::json step_record(const StepResult& s, const StepStats* stats) {
  nlohmann::json j = {{"step", s.step},         {"loss", s.loss},           {"z_loss", s.z_loss},
                      {"log_z_mean", s.log_z_mean}, {"log_z_min", s.log_z_min}, {"lr", s.lr},
                      {"grad_norm", s.grad_norm}, {"step_ms", s.step_ms},     {"tokens_per_s", s.tokens_per_s},
                      {"finite", s.finite}};
  if (s.comm_ms > 0) j["comm_ms"] = s.comm_ms;
  if (stats) {
    j["update_ratio"] = stats->update_ratio;
    j["output_logit_mean"] = stats->output_logit_mean;
    j["output_logit_max"] = stats->output_logit_max;
    j["final_residual_rms"] = stats->final_residual_rms;
    nlohmann::json layers = nlohmann::json::array();
    for (const LayerStats& l : stats->layers)
      layers.push_back({{"residual_rms", l.residual_rms}, {"norm_out_rms", l.norm_out_rms}, {"attention_logit", l.attention_logit},
                        {"grad_norm", l.grad_norm}, {"update_ratio", l.update_ratio}});
    j["layers"] = layers;
  }
  return j;
}

nlohmann::json step_record(const StepReport& r) {
  nlohmann::json j = step_record(r.result, r.stats);
  if (r.eval) {
    j["val_loss"] = r.eval->val_loss;
    if (!std::isnan(r.eval->train_loss)) j["train_loss"] = r.eval->train_loss;  // estimated with eval_train
  }
  if (r.divergence) j["divergence"] = r.divergence->detail;
  return j;
}

}  // namespace tapegrad::lm
