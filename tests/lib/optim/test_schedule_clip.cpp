#include "support.h"
#include "tapegrad/optim/adamw.h"
#include "tapegrad/optim/clip.h"
#include "tapegrad/optim/schedule.h"

using namespace tapegrad;
using namespace tapegrad::testing;

TEST_CASE("schedule: linear warmup then cosine to the floor", "[optim]") {
  const CosineSchedule s({.lr = 1e-3, .min_lr = 1e-4, .warmup = 100, .total = 2000});
  CHECK_THAT(s.at(0), Catch::Matchers::WithinRel(1e-5, 1e-12));
  CHECK_THAT(s.at(49), Catch::Matchers::WithinRel(5e-4, 1e-12));
  CHECK_THAT(s.at(99), Catch::Matchers::WithinRel(1e-3, 1e-12));
  CHECK_THAT(s.at(100), Catch::Matchers::WithinRel(1e-3, 1e-12));
  CHECK_THAT(s.at(1050), Catch::Matchers::WithinRel(5.5e-4, 1e-12));  // half way: the mean of lr and min_lr
  CHECK_THAT(s.at(1999), Catch::Matchers::WithinRel(0.000100000615141408, 1e-10));
  CHECK_THAT(s.at(5000), Catch::Matchers::WithinRel(1e-4, 1e-12));
}

TEST_CASE("schedule: the registered shapes, by name, and one of the user's own", "[optim][registry]") {
  const ScheduleShape shape{.lr = 1e-3, .min_lr = 1e-4, .warmup = 10, .total = 110};
  const auto cosine = make_schedule("cosine", shape), linear = make_schedule("linear", shape);
  const auto constant = make_schedule("constant", shape), one_cycle = make_schedule("one-cycle", shape);
  // The same warmup for all but one-cycle, which rises from min_lr along half a cosine.
  for (const auto* s : {cosine.get(), linear.get(), constant.get()}) {
    CHECK_THAT(s->at(0), Catch::Matchers::WithinRel(1e-4, 1e-12));
    CHECK_THAT(s->at(9), Catch::Matchers::WithinRel(1e-3, 1e-12));
  }
  CHECK_THAT(one_cycle->at(0), Catch::Matchers::WithinRel(1e-4, 1e-12));
  CHECK_THAT(one_cycle->at(5), Catch::Matchers::WithinRel(5.5e-4, 1e-12));  // half way up: the mean
  CHECK_THAT(one_cycle->at(10), Catch::Matchers::WithinRel(1e-3, 1e-12));
  // Half way through the decay (step 60): cosine and linear at the mean, constant at the peak.
  CHECK_THAT(cosine->at(60), Catch::Matchers::WithinRel(5.5e-4, 1e-12));
  CHECK_THAT(linear->at(60), Catch::Matchers::WithinRel(5.5e-4, 1e-12));
  CHECK_THAT(linear->at(35), Catch::Matchers::WithinRel(1e-3 - 0.25 * 9e-4, 1e-12));
  CHECK_THAT(one_cycle->at(60), Catch::Matchers::WithinRel(5.5e-4, 1e-12));
  CHECK(constant->at(60) == 1e-3);
  CHECK(constant->at(500) == 1e-3);
  CHECK_THAT(linear->at(110), Catch::Matchers::WithinRel(1e-4, 1e-12));
  CHECK_THAT(cosine->at(110), Catch::Matchers::WithinRel(1e-4, 1e-12));
  // The built-in cosine is CosineSchedule.
  CHECK(cosine->at(37) == CosineSchedule(shape).at(37));
  CHECK_THROWS_WITH(make_schedule("cosin", shape),
                    Catch::StartsWith("unknown schedule 'cosin'; known: cosine, linear, constant, one-cycle"));
  // A program's own, by name: inverse square root after the warmup (as in the original Transformer).
  struct InverseSqrt final : Schedule {
    ScheduleShape s;
    explicit InverseSqrt(ScheduleShape shape) : s(shape) {}
    double at(int64_t step) const override {
      return s.lr * std::min((step + 1.0) / s.warmup, std::sqrt(s.warmup / (step + 1.0)));
    }
  };
  if (!schedule_registry().find("inverse-sqrt-test"))
    schedule_registry().add({.name = "inverse-sqrt-test", .description = "lr min((t+1)/w, sqrt(w/(t+1)))",
                             .make = [](const ScheduleShape& s) -> std::unique_ptr<Schedule> {
                               return std::make_unique<InverseSqrt>(s);
                             }});
  CHECK_THAT(make_schedule("inverse-sqrt-test", shape)->at(39), Catch::Matchers::WithinRel(5e-4, 1e-12));
  CHECK_THROWS_WITH(schedule_registry().add({.name = "cosine", .description = "mine", .make = {}}),
                    Catch::StartsWith("schedule name 'cosine' is taken"));
}

TEST_CASE("clip_grad_norm: returns the global norm and rescales above the limit", "[optim]") {
  Parameter<double> a("a", Tensor<double>(Shape{2})), b("b", Tensor<double>(Shape{1}));
  a.grad()[0] = 3, a.grad()[1] = 0, b.grad()[0] = 4;  // global norm 5
  std::vector<Parameter<double>*> ps{&a, &b};
  CHECK(clip_grad_norm<double>(ps, 10.0) == 5.0);
  CHECK(a.grad()[0] == 3);  // below the limit: untouched
  CHECK(clip_grad_norm<double>(ps, 1.0) == 5.0);
  CHECK_THAT(grad_norm<double>(ps), Catch::Matchers::WithinRel(1.0, 1e-6));
  CHECK_THAT(b.grad()[0], Catch::Matchers::WithinRel(0.8, 1e-6));
}

TEST_CASE("grad_norm: the per-parameter sums it hands out are the ones it adds, in any batch of parameters", "[optim]") {
  // 70 parameters: more than one of the reduction's batches of 64.
  Rng rng(5);
  std::vector<std::unique_ptr<Parameter<float>>> own;
  std::vector<Parameter<float>*> ps;
  for (int k = 0; k < 70; ++k) {
    own.push_back(std::make_unique<Parameter<float>>("p" + std::to_string(k), Tensor<float>(Shape{1 + 7 * (k % 5)})));
    for (int64_t i = 0; i < own.back()->numel(); ++i) own.back()->grad()[i] = rng.normal();
    ps.push_back(own.back().get());
  }
  std::vector<double> squares(ps.size(), -1);
  const double norm = grad_norm<float>(std::span<Parameter<float>* const>(ps), std::span<double>(squares));
  CHECK(norm == grad_norm<float>(ps));  // the same bits with or without the sums handed out
  double total = 0;
  for (size_t k = 0; k < ps.size(); ++k) {
    double direct = 0;
    for (int64_t i = 0; i < ps[k]->numel(); ++i) direct += double(ps[k]->grad()[i]) * ps[k]->grad()[i];
    CHECK_THAT(squares[k], Catch::Matchers::WithinRel(direct, 1e-12));
    total += squares[k];
  }
  CHECK(norm == std::sqrt(total));  // added in parameter order
  std::vector<double> short_of_one(ps.size() - 1);
  CHECK_THROWS_WITH(grad_norm<float>(std::span<Parameter<float>* const>(ps), std::span<double>(short_of_one)),
                    "grad_norm: 69 sums for 70 parameters");
}

TEST_CASE("schedule and clip_grad_norm: a NaN or negative rate, a negative step count, a NaN limit are refused by name",
          "[optim][errors]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  REQUIRE_THROWS_WITH(make_schedule("cosine", {.lr = nan}), "schedule 'cosine': lr must be a finite number >= 0, got nan");
  REQUIRE_THROWS_WITH(make_schedule("linear", {.min_lr = -1}), "schedule 'linear': min_lr must be a finite number >= 0, got -1");
  REQUIRE_THROWS_WITH(make_schedule("cosine", {.total = -1}),
                      "schedule 'cosine': warmup and total are step counts (>= 0), got 100 and -1");
  Parameter<float> a("a", Tensor<float>::full({2}, 1.0f));
  a.grad()[0] = 30;
  std::vector<Parameter<float>*> ps{&a};
  REQUIRE_THROWS_WITH(clip_grad_norm<float>(ps, nan), "clip_grad_norm: max_norm must be a number (<= 0 turns clipping off), got nan");
  CHECK(a.grad()[0] == 30);  // untouched
  CHECK(clip_grad_norm<float>(ps, -1) == Approx(30));  // off
  CHECK(a.grad()[0] == 30);
}

TEST_CASE("clip_grad_norm: a NaN gradient gives a NaN norm and is not spread", "[optim]") {
  Parameter<float> a("a", Tensor<float>(Shape{2}));
  a.grad()[0] = std::numeric_limits<float>::quiet_NaN();
  a.grad()[1] = 1;
  std::vector<Parameter<float>*> ps{&a};
  CHECK(std::isnan(clip_grad_norm<float>(ps, 1.0)));
  CHECK(a.grad()[1] == 1);
}

TEST_CASE("clip_factor folded into the optimizer step equals clipping in place", "[optim]") {
  Parameter<double> a("a", Tensor<double>::full({1, 2}, 1.0)), b("b", Tensor<double>::full({1, 2}, 1.0));
  a.grad()[0] = 3, a.grad()[1] = -4;  // norm 5
  b.grad() = a.grad();
  std::vector<Parameter<double>*> pa{&a}, pb{&b};
  AdamW<double> oa(pa), ob(pb);
  oa.step(0.1, clip_factor(grad_norm<double>(pa), 1.0));
  clip_grad_norm<double>(pb, 1.0);
  ob.step(0.1);
  CHECK(a.value()[0] == b.value()[0]);
  CHECK(a.value()[1] == b.value()[1]);
  CHECK(clip_factor(0.5, 1.0) == 1.0);
  CHECK(clip_factor(std::nan(""), 1.0) == 1.0);
}
