// A training step as a record, written one way for every writer: train_lm's metrics.jsonl lines,
// Python's StepResult.to_dict() and Trainer.fit's on_step dicts. Keys are StepResult's field
// names (lr is the step's scheduled rate); comm_ms only in data-parallel runs; with the
// instrumentation (--instrument) also update_ratio, output_logit_mean/max, final_residual_rms and
// "layers": [{residual_rms, norm_out_rms, attention_logit, grad_norm, update_ratio}] (instrument.h).
// The lab's curves hold the same values as CSV columns (lab/records.h: curve_schema), where the
// step's rate is "lr_now" beside the run's peak "lr".
#pragma once

#include <nlohmann/json.hpp>

#include "tapegrad/lm/instrument.h"
#include "tapegrad/lm/run.h"
#include "tapegrad/lm/trainer.h"

namespace tapegrad::lm {

nlohmann::json step_record(const StepResult& s, const StepStats* stats = nullptr);
// The same with what lm::run adds to the step: its evaluation (val_loss; train_loss when
// estimated) and, at a divergence, "divergence": its detail.
nlohmann::json step_record(const StepReport& r);

}  // namespace tapegrad::lm
