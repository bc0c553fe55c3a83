#include "tapegrad/optim/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace tapegrad {

namespace {

// Progress through the decay, 0 at the end of the warmup and 1 at the last step.
double decay_progress(const ScheduleShape& s, int64_t step) {
  if (s.total <= s.warmup) return 1;
  return std::clamp(static_cast<double>(step - s.warmup) / static_cast<double>(s.total - s.warmup), 0.0, 1.0);
}
double warmup_rate(const ScheduleShape& s, int64_t step) {
  return s.lr * static_cast<double>(step + 1) / static_cast<double>(s.warmup);
}
double cosine_decay(const ScheduleShape& s, int64_t step) {
  return s.min_lr + (s.lr - s.min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * decay_progress(s, step)));
}

// A schedule from its rate function; the built-ins below need nothing else.
class FunctionSchedule final : public Schedule {
 public:
  FunctionSchedule(ScheduleShape shape, double (*rate)(const ScheduleShape&, int64_t)) : shape_(shape), rate_(rate) {}
  double at(int64_t step) const override { return rate_(shape_, step); }

 private:
  ScheduleShape shape_;
  double (*rate_)(const ScheduleShape&, int64_t);
};

template <double (*Rate)(const ScheduleShape&, int64_t)>
std::unique_ptr<Schedule> make(const ScheduleShape& s) {
  return std::make_unique<FunctionSchedule>(s, Rate);
}

double linear(const ScheduleShape& s, int64_t step) {
  if (step < s.warmup) return warmup_rate(s, step);
  return s.min_lr + (s.lr - s.min_lr) * (1.0 - decay_progress(s, step));
}
double constant(const ScheduleShape& s, int64_t step) { return step < s.warmup ? warmup_rate(s, step) : s.lr; }
double one_cycle(const ScheduleShape& s, int64_t step) {
  if (step < s.warmup) {  // min_lr -> lr along half a cosine, reaching lr at step `warmup`
    const double p = static_cast<double>(step) / static_cast<double>(s.warmup);
    return s.lr + (s.min_lr - s.lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * p));
  }
  return cosine_decay(s, step);
}

}  // namespace

double CosineSchedule::at(int64_t step) const {
  if (step < shape_.warmup) return warmup_rate(shape_, step);
  if (shape_.total <= shape_.warmup) return shape_.min_lr;
  return cosine_decay(shape_, step);
}

Registry<ScheduleEntry>& schedule_registry() {
  static Registry<ScheduleEntry>* const registry = [] {
    auto* r = new Registry<ScheduleEntry>("schedule");  // never destroyed: entries outlive static destructors
    r->add({.name = "cosine", .description = "linear warmup, then cosine decay to --min-lr (nanoGPT)",
            .make = [](const ScheduleShape& s) -> std::unique_ptr<Schedule> { return std::make_unique<CosineSchedule>(s); }});
    r->add({.name = "linear", .description = "linear warmup, then linear decay to --min-lr", .make = make<linear>});
    r->add({.name = "constant", .description = "linear warmup, then --lr throughout", .make = make<constant>});
    r->add({.name = "one-cycle",
            .description = "from --min-lr up to --lr over the warmup and back down to --min-lr, both along a cosine "
                           "(torch's OneCycleLR)",
            .make = make<one_cycle>});
    return r;
  }();
  return *registry;
}

std::unique_ptr<Schedule> make_schedule(const std::string& name, const ScheduleShape& shape) {
  const ScheduleEntry& entry = schedule_registry().at(name);
  check_finite(shape.lr, Bound::kNonNegative, "schedule '", name, "': lr");
  check_finite(shape.min_lr, Bound::kNonNegative, "schedule '", name, "': min_lr");
  check(shape.warmup >= 0 && shape.total >= 0, "schedule '", name, "': warmup and total are step counts (>= 0), got ",
        shape.warmup, " and ", shape.total);
  return entry.make(shape);
}

}  // namespace tapegrad
