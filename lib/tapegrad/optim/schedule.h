// Learning-rate schedules: the rate of each step, as objects (a Schedule), the built-ins in an
// open registry (`--schedule cosine`; registry.h) so a program can add its own by name.
//
// Every built-in warms up linearly from 0, then follows its shape to the floor `min_lr` at the
// last step (`step` counts from 0; the first step already has a non-zero rate, as in nanoGPT):
//   warmup (step < warmup):  lr * (step + 1) / warmup
//   cosine:    min_lr + (lr - min_lr) * 0.5 (1 + cos(pi p)),  p = (step - warmup) / (total - warmup) in [0, 1]
//   linear:    min_lr + (lr - min_lr) (1 - p)
//   constant:  lr (min_lr unused)
//   one-cycle: rises from min_lr to lr over the warmup along half a cosine, then falls as cosine
//              does (Smith & Topin 2019; torch's OneCycleLR with anneal_strategy="cos",
//              pct_start = warmup / total, initial and final rate min_lr)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "tapegrad/registry.h"

namespace tapegrad {

class Schedule {
 public:
  virtual ~Schedule() = default;
  // The rate of step `step` (from 0).
  virtual double at(int64_t step) const = 0;
};

// What a built-in schedule is shaped by.
struct ScheduleShape {
  double lr = 1e-3;      // the peak
  double min_lr = 1e-4;  // the floor at the last step
  int64_t warmup = 100;
  int64_t total = 2000;  // steps in the run
};

class CosineSchedule final : public Schedule {
 public:
  explicit CosineSchedule(ScheduleShape shape) : shape_(shape) {}
  double at(int64_t step) const override;

 private:
  ScheduleShape shape_;
};

struct ScheduleEntry {
  std::string name;
  std::string description;  // one line, for --help
  std::function<std::unique_ptr<Schedule>(const ScheduleShape&)> make;
};

Registry<ScheduleEntry>& schedule_registry();

// The schedule registered as `name`; throws "unknown schedule 'x'; known: ...".
std::unique_ptr<Schedule> make_schedule(const std::string& name, const ScheduleShape& shape);

}  // namespace tapegrad
