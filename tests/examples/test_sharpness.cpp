// Sharpness on a tiny decoder (a few hundred weights), where the whole Hessian fits in memory:
// the product H v against H built column by column, the top eigenvalue against Eigen's dense
// solver, plain and Adam-preconditioned.
#include <Eigen/Dense>
#include <cmath>
#include <map>

#include "support.h"
#include "tapegrad/lm/sharpness.h"
#include "tapegrad/lm/trainer.h"
#include "tapegrad/optim/adamw.h"

using namespace tapegrad;
using namespace tapegrad::lm;

namespace {
std::unique_ptr<Trainer> tiny_trainer() {
  TrainConfig c;
  c.layers = 1, c.heads = 1, c.dim = 4, c.ctx = 3, c.batch = 2, c.steps = 20, c.warmup = 0, c.lr = 3e-2;
  c.threads = 1, c.eval_every = 0;
  const std::string text = "abcab cabba bacca ccab abba cab ";
  auto tok = build_tokenizer(c, text, "text");
  auto t = std::make_unique<Trainer>(c, tok, make_token_data(c, *tok, text));
  for (int i = 0; i < 5; ++i) t->train_step();  // away from the init; AdamW has second moments
  return t;
}

Eigen::MatrixXd dense_hessian(BatchLoss& loss) {
  const int64_t n = loss.size();
  Eigen::MatrixXd h(n, n);
  Eigen::VectorXd e = Eigen::VectorXd::Zero(n), col(n);
  for (int64_t j = 0; j < n; ++j) {
    e(j) = 1;
    loss.hvp({e.data(), static_cast<size_t>(n)}, {col.data(), static_cast<size_t>(n)});
    h.col(j) = col;
    e(j) = 0;
  }
  return h;
}
}  // namespace

TEST_CASE("sharpness: Hessian-vector products and the top eigenvalue of a tiny decoder, against dense H", "[sharpness]") {
  auto trainer = tiny_trainer();
  const SharpnessOptions o{.iters = 400, .tol = 1e-10};
  std::vector<int32_t> ids, targets;
  int64_t B = 0;
  sharpness_batch(*trainer, o, ids, targets, B);
  auto model = to_float64(trainer->model());
  BatchLoss loss(*model, ids, targets, B, trainer->config().ctx);
  const int64_t n = loss.size();
  INFO(n << " weights");
  REQUIRE(n > 100);
  REQUIRE(n < 1000);
  const Eigen::MatrixXd h = dense_hessian(loss);
  // Symmetric, as a Hessian of a smooth loss must be: a check on the gradients themselves.
  CHECK((h - h.transpose()).norm() <= 1e-6 * h.norm());
  const Eigen::MatrixXd hs = (h + h.transpose()) / 2;

  Rng rng(3);
  Eigen::VectorXd v(n), hv(n);
  for (int64_t i = 0; i < n; ++i) v(i) = rng.normal();
  loss.hvp({v.data(), static_cast<size_t>(n)}, {hv.data(), static_cast<size_t>(n)});
  CHECK((hv - h * v).norm() <= 1e-6 * (h * v).norm());

  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> dense(hs);
  const double top = dense.eigenvalues()(n - 1);
  const Sharpness s = measure_sharpness(*trainer, 3e-2, o);
  INFO("Lanczos " << s.value << " (" << s.iterations << " steps, residual " << s.residual << "), dense " << top);
  CHECK(std::abs(s.value - top) <= 1e-4 * std::abs(top));
  CHECK(s.threshold == Approx(2 / 3e-2));

  // Preconditioned: λ₁(D H D), D = P^{-1/2} from AdamW's state, against the dense D H D.
  Eigen::VectorXd d(n);
  {
    auto& adamw = dynamic_cast<AdamW<float>&>(trainer->optimizer());
    const AdamWOptions& a = adamw.options();
    const double t = static_cast<double>(adamw.steps());
    const double b1 = 1 - std::pow(a.beta1, t), b2 = 1 - std::pow(a.beta2, t);
    int64_t k = 0;
    std::map<std::string, const Tensor<float>*> v2;
    for (auto& [name, tensor] : adamw.state())
      if (name.rfind("exp_avg_sq.", 0) == 0) v2[name.substr(11)] = tensor;
    for (auto& [name, p] : model->named_parameters())
      for (int64_t i = 0; i < p->numel(); ++i) d(k++) = 1 / std::sqrt(b1 * (std::sqrt((*v2.at(name))[i] / b2) + a.eps));
  }
  const Eigen::MatrixXd pre = d.asDiagonal() * hs * d.asDiagonal();
  const double pre_top = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(pre).eigenvalues()(n - 1);
  INFO("preconditioned: Lanczos " << s.preconditioned << " (" << s.preconditioned_iterations << " steps), dense "
                                  << pre_top);
  CHECK(std::abs(s.preconditioned - pre_top) <= 1e-4 * std::abs(pre_top));
  CHECK(s.preconditioned_threshold == Approx(38 / 3e-2));

  // A measurement leaves the run untouched: the next step is what it would have been.
  auto twin = tiny_trainer();
  CHECK(trainer->train_step().loss == twin->train_step().loss);
}

TEST_CASE("sharpness: the default 20 Lanczos steps reach the top eigenvalue of a small model to 1e-3", "[sharpness]") {
  auto trainer = tiny_trainer();
  const Sharpness exact = measure_sharpness(*trainer, 1e-2, {.iters = 400, .tol = 1e-12});
  const Sharpness quick = measure_sharpness(*trainer, 1e-2);
  INFO("quick " << quick.value << " in " << quick.iterations << " steps (residual " << quick.residual << "), exact "
                << exact.value);
  CHECK(quick.iterations <= 20);
  CHECK(std::abs(quick.value - exact.value) <= 1e-3 * std::abs(exact.value));
}
