// Weight decay's two forms (lr-scaled, independent) in both optimizers, and the optimizer registry:
// built-ins by name, a program's own rule registered and built by name, the sharpness hooks.
#include "support.h"
#include "tapegrad/optim/adamw.h"
#include "tapegrad/optim/registry.h"
#include "tapegrad/optim/sgd.h"

using namespace tapegrad;
using namespace tapegrad::testing;

namespace {
// Three steps of a decaying matrix parameter (starting at 1) under a falling schedule peaking at
// 0.1; the values expected were evaluated in Python from the update as optimizer.h writes it.
const double kGrads[] = {0.5, -0.25, 2.0};
const double kLrs[] = {0.1, 0.05, 0.025};

template <typename Opt, typename Options>
std::vector<double> three_steps(Options options) {
  Parameter<double> w("w", Tensor<double>::full({1, 1}, 1.0));
  Opt opt({&w}, options);
  std::vector<double> out;
  for (int t = 0; t < 3; ++t) {
    w.grad()[0] = kGrads[t];
    opt.step(kLrs[t]);
    out.push_back(w.value()[0]);
  }
  return out;
}
}  // namespace

TEST_CASE("weight decay: AdamW's lr-scaled and independent forms, step by step", "[optim]") {
  using M = WeightDecayMode;
  // lr-scaled: p -= lr (m_hat / (sqrt(v_hat) + eps) + wd p)
  CHECK_THAT(three_steps<AdamW<double>>(AdamWOptions{.weight_decay = 0.1, .decay_mode = M::kLrScaled, .peak_lr = 0.1}),
             Catch::Matchers::Approx(std::vector<double>{0.890000002, 0.872233150343923, 0.85328637642339}).epsilon(1e-13).margin(1e-14));
  // independent: p -= lr m_hat / (sqrt(v_hat) + eps) + (lr / peak) wd p
  CHECK_THAT(
      three_steps<AdamW<double>>(AdamWOptions{.weight_decay = 0.1, .decay_mode = M::kIndependent, .peak_lr = 0.1}),
      Catch::Matchers::Approx(std::vector<double>{0.800000002, 0.746683150253923, 0.711249880452902}).epsilon(1e-13).margin(1e-14));
}

TEST_CASE("weight decay: SGD's lr-scaled (L2 through the gradient) and independent forms", "[optim]") {
  using M = WeightDecayMode;
  CHECK_THAT(three_steps<SGD<double>>(SGDOptions{.momentum = 0.9, .weight_decay = 0.1, .decay_mode = M::kLrScaled}),
             Catch::Matchers::Approx(std::vector<double>{0.94, 0.9208, 0.859858}).epsilon(1e-13).margin(1e-14));
  CHECK_THAT(three_steps<SGD<double>>(
                 SGDOptions{.momentum = 0.9, .weight_decay = 0.1, .decay_mode = M::kIndependent, .peak_lr = 0.1}),
             Catch::Matchers::Approx(std::vector<double>{0.85, 0.7975, 0.7230625}).epsilon(1e-13).margin(1e-14));
}

TEST_CASE("weight decay: the independent form does not scale with the learning rate", "[optim]") {
  // Zero gradient, one step at the schedule's peak: w = 1 - wd whatever the peak lr is, where the
  // lr-scaled form gives 1 - lr wd.
  for (const double peak : {1e-3, 1e-1}) {
    Parameter<double> a("a", Tensor<double>::full({2, 2}, 1.0)), b("b", Tensor<double>::full({2, 2}, 1.0));
    AdamW<double> independent({&a}, {.weight_decay = 1e-4, .decay_mode = WeightDecayMode::kIndependent, .peak_lr = peak});
    AdamW<double> lr_scaled({&b}, {.weight_decay = 1e-4});
    independent.step(peak), lr_scaled.step(peak);
    CHECK(a.value()[0] == 1 - 1e-4);
    CHECK(b.value()[0] == 1 - peak * 1e-4);
  }
  CHECK(parse_weight_decay_mode("independent") == WeightDecayMode::kIndependent);
  CHECK(to_string(WeightDecayMode::kLrScaled) == "lr-scaled");
  CHECK(parse_weight_decay_mode("coupled") == WeightDecayMode::kLrScaled);  // the former name, still read
  REQUIRE_THROWS_WITH(parse_weight_decay_mode("l2"), "unknown weight decay mode 'l2'; known: lr-scaled, independent");
}

TEST_CASE("optimizer registry: built-ins by name, a program's own rule by name", "[optim][registry]") {
  Parameter<float> w("w", Tensor<float>::full({2, 2}, 1.0f));
  CHECK(optimizer_registry().names() == std::vector<std::string>{"adamw", "sgd"});
  auto adamw = make_optimizer("adamw", {&w}, {});
  CHECK(dynamic_cast<AdamW<float>*>(adamw.get()) != nullptr);
  REQUIRE_THROWS_WITH(make_optimizer("lion", {&w}, {}), "unknown optimizer 'lion'; known: adamw, sgd");
  // A rule of one's own: sign descent, registered from here and then found by name.
  struct SignDescent : Optimizer<float> {
    using Optimizer<float>::Optimizer;
    void step(double lr, double) override {
      for_each_update(1, [&](size_t, float* v, const float* g, int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) v[i] -= static_cast<float>(lr) * (g[i] > 0 ? 1.f : g[i] < 0 ? -1.f : 0.f);
      });
      ++steps_;
    }
    std::vector<std::pair<std::string, Tensor<float>*>> state() override { return {}; }
  };
  optimizer_registry().add({.name = "test-sign",
                            .description = "sign descent, registered by a test",
                            .make = [](std::vector<Parameter<float>*> p, const OptimizerSettings&) {
                              return std::unique_ptr<Optimizer<float>>(std::make_unique<SignDescent>(std::move(p)));
                            }});
  auto sign = make_optimizer("test-sign", {&w}, {});
  w.grad()[0] = 3, w.grad()[1] = -0.5;
  sign->step(0.25, 1);
  CHECK(w.value()[0] == 0.75f);
  CHECK(w.value()[1] == 1.25f);
  CHECK(w.value()[2] == 1.0f);
  REQUIRE_THROWS_WITH(optimizer_registry().add({.name = "adamw", .description = "again", .make = {}}),
                      Catch::StartsWith("optimizer name 'adamw' is taken (by: Adam with decoupled"));
}

TEST_CASE("optimizers: edges of stability and Adam's preconditioner, for sharpness", "[optim][sharpness]") {
  Parameter<float> w("w", Tensor<float>::full({1, 2}, 1.0f));
  SGD<float> sgd({&w}, {.momentum = 0.9});
  CHECK(!sgd.preconditioned());
  CHECK(sgd.stability_threshold(0.1) == Approx(38.0));  // (2 + 2 mu) / lr
  CHECK(sgd.preconditioner().empty());
  AdamW<float> adam({&w}, {.beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8});
  CHECK(adam.preconditioned());
  CHECK(adam.stability_threshold(0.01) == Approx(3800.0));  // (2 + 2 b1) / ((1 - b1) lr)
  CHECK(adam.preconditioner().empty());                     // no second moment yet
  w.grad()[0] = 2, w.grad()[1] = -4;
  adam.step(0.01);
  // After one step v_hat = g^2: P = (1 - b1) (|g| + eps).
  const auto p = adam.preconditioner();
  REQUIRE(p.size() == 1);
  CHECK_THAT(p[0], Catch::Matchers::Approx(std::vector<double>{0.1 * (2 + 1e-8), 0.1 * (4 + 1e-8)}).epsilon(1e-6));
}
