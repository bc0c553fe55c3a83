// One run of a sweep's grid: trained through lm::run with the lab's divergence rules, its curve
// written a line per step (records.h: curve_row) and its record folded from the steps (fold_step)
// and the run's end. sweep.h schedules the runs and writes their files.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "tapegrad/lab/records.h"
#include "tapegrad/lab/run_spec.h"
#include "tapegrad/lab/sweep_options.h"
#include "tapegrad/lab/timing.h"
#include "tapegrad/lm/trainer.h"

namespace tapegrad::lab {

// Trains one run. `curve` receives one CSV line per step (curve_columns order). Returns early,
// with diverged set, on divergence; `stop` (polled each step) aborts with nullopt. `timing`, if
// given, receives where the run's time went (timing.h).
std::optional<RunRecord> run_one(const SweepOptions& o, const RunSpec& spec,
                                 std::shared_ptr<const text::Tokenizer> tokenizer,
                                 std::shared_ptr<const lm::TokenData> data, int threads, std::string& curve,
                                 const std::function<bool()>& stop, RunTiming* timing = nullptr);

}  // namespace tapegrad::lab
