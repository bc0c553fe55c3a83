#include "support.h"
#include "tapegrad/optim/adamw.h"
#include "tapegrad/optim/sgd.h"

using namespace tapegrad;
using namespace tapegrad::testing;

TEST_CASE("adamw: three steps match torch.optim.AdamW's update written out by hand", "[optim]") {
  // One matrix (decays) and one vector (does not), both starting at 1 with the same gradients.
  Parameter<double> w("w", Tensor<double>::full({1, 1}, 1.0)), b("b", Tensor<double>::full({1}, 1.0));
  AdamW<double> opt({&w, &b}, {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.1});
  CHECK(opt.decays(0));
  CHECK_FALSE(opt.decays(1));
  const double grads[] = {0.5, -0.25, 2.0};
  // p = p (1 - lr wd); m, v moments; p -= lr m_hat / (sqrt(v_hat) + eps): evaluated in Python.
  const double expect_w[] = {0.890000002, 0.854466298687846, 0.778856871522275};
  const double expect_b[] = {0.900000002, 0.873366298707846, 0.806301534529153};
  for (int t = 0; t < 3; ++t) {
    w.grad()[0] = b.grad()[0] = grads[t];
    opt.step(0.1);
    CHECK_THAT(w.value().view(), AllClose<double>({expect_w[t]}, 1e-14, 1e-13));
    CHECK_THAT(b.value().view(), AllClose<double>({expect_b[t]}, 1e-14, 1e-13));
  }
  CHECK(opt.steps() == 3);
  CHECK(opt.state().size() == 4);
  CHECK(opt.state()[0].first == "exp_avg.w");
}

TEST_CASE("adamw: the decay rule is configurable", "[optim]") {
  Parameter<double> w("w", Tensor<double>::full({1, 1}, 1.0));
  AdamW<double> opt({&w}, {.weight_decay = 0.5}, [](const Parameter<double>&) { return false; });
  opt.step(0.1);  // zero gradient, no decay: nothing moves
  CHECK(w.value()[0] == 1.0);
}

TEST_CASE("adamw: invalid hyperparameters are rejected", "[optim][errors]") {
  Parameter<double> w("w", Tensor<double>::full({1}, 1.0));
  REQUIRE_THROWS_WITH(AdamW<double>({&w}, {.beta1 = 1.0}), Catch::Contains("betas must be in [0, 1)"));
  // Each option is named with its value; infinity and NaN never pass (an infinite decay or eps
  // would empty the weights or freeze them without a word).
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  REQUIRE_THROWS_WITH(AdamW<double>({&w}, {.eps = 0}), "AdamW: eps must be a finite number > 0, got 0");
  REQUIRE_THROWS_WITH(AdamW<double>({&w}, {.eps = inf}), "AdamW: eps must be a finite number > 0, got inf");
  REQUIRE_THROWS_WITH(AdamW<double>({&w}, {.weight_decay = inf}), "AdamW: weight_decay must be a finite number >= 0, got inf");
  REQUIRE_THROWS_WITH(AdamW<double>({&w}, {.weight_decay = nan}), "AdamW: weight_decay must be a finite number >= 0, got nan");
  REQUIRE_THROWS_WITH(SGD<double>({&w}, {.weight_decay = inf}), "SGD: weight_decay must be a finite number >= 0, got inf");
  REQUIRE_THROWS_WITH(SGD<double>({&w}, {.peak_lr = inf}), "SGD: peak_lr must be a finite number >= 0, got inf");
}

// The case the issue reported: a frozen weight went 1 -> 0.904 in 10 AdamW steps at wd 0.1, lr 0.1.
TEST_CASE("optimizers: frozen parameters are neither updated nor decayed", "[optim]") {
  Parameter<double> frozen("frozen", Tensor<double>::full({2, 2}, 1.0)), live("live", Tensor<double>::full({2, 2}, 1.0));
  frozen.requires_grad = false;
  AdamW<double> adam({&frozen, &live}, {.weight_decay = 0.1});
  SGD<double> sgd({&frozen, &live}, {.momentum = 0.9, .weight_decay = 0.1});
  for (Optimizer<double>* opt : {static_cast<Optimizer<double>*>(&adam), static_cast<Optimizer<double>*>(&sgd)}) {
    for (int s = 0; s < 10; ++s) {
      frozen.grad().fill(0.3), live.grad().fill(0.3);  // even a stale gradient must not move it
      opt->step(0.1);
    }
  }
  for (int64_t i = 0; i < 4; ++i) CHECK(frozen.value()[i] == 1.0);
  CHECK(live.value()[0] < 0.5);
}
