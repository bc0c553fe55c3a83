// Sharpness on a tiny decoder (a few hundred weights), where the whole Hessian fits in memory:
// the product H v against H built column by column, the top eigenvalue against Eigen's dense
// solver, plain and Adam-preconditioned.
#include <Eigen/Dense>
#include <cmath>
#include <filesystem>
#include <map>

#include "support.h"
#include "tapegrad/lm/checkpoint.h"
#include "tapegrad/lm/sharpness.h"
#include "tapegrad/lm/trainer.h"
#include "tapegrad/optim/adamw.h"

using namespace tapegrad;
using namespace tapegrad::lm;

namespace {
std::unique_ptr<Trainer> tiny_trainer() {
  TrainConfig c;
  c.model.layers = 1, c.model.heads = 1, c.model.dim = 4, c.model.ctx = 3, c.batch = 2, c.steps = 20, c.warmup = 0, c.lr = 3e-2;
  c.threads = 1, c.eval_every = 0;
  const std::string text = "abcab cabba bacca ccab abba cab ";
  auto tok = build_tokenizer(c, text, "text");
  auto t = std::make_unique<Trainer>(c, tok, make_token_data(c, *tok, text));
  for (int i = 0; i < 5; ++i) t->train_step();  // away from the init; AdamW has second moments
  return t;
}

// The float64 copy of a trainer's model and its loss on the batch a measurement uses.
struct Float64Loss {
  std::unique_ptr<nn::Decoder<double>> model;
  BatchLoss loss;
  explicit Float64Loss(Trainer& t) : model(to_float64(*t.decoder())), loss(on_batch(t, *model)) {}
  static BatchLoss on_batch(Trainer& t, nn::Decoder<double>& m) {
    std::vector<int32_t> ids, targets;
    int64_t B = 0;
    sharpness_batch(t, {}, ids, targets, B);
    return BatchLoss(m, std::move(ids), std::move(targets), B, t.config().model.ctx);
  }
};

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
  Float64Loss f(*trainer);
  auto& [model, loss] = f;
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

TEST_CASE("sharpness: the curvature along the gradient equals g'Hg / g'g with the dense Hessian", "[sharpness]") {
  auto trainer = tiny_trainer();
  Float64Loss f(*trainer);
  auto& [model, loss] = f;
  const Eigen::MatrixXd h = dense_hessian(loss);
  Eigen::VectorXd g(loss.size());
  loss.gradient({g.data(), static_cast<size_t>(g.size())});
  const double want = g.dot(h * g) / g.squaredNorm();
  const double got = directional_curvature(loss);
  INFO("g'Hg/g'g " << got << " vs dense " << want);
  CHECK_THAT(got, Catch::Matchers::WithinRel(want, 1e-6));
  // A Rayleigh quotient: at most the top eigenvalue.
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(0.5 * (h + h.transpose()));
  CHECK(got <= eig.eigenvalues().maxCoeff() * (1 + 1e-9));
}

namespace {
std::unique_ptr<Trainer> prenorm_trainer(bool tie_head, double eps) {
  TrainConfig c;
  c.model.layers = 2, c.model.heads = 1, c.model.dim = 4, c.model.ctx = 3, c.batch = 2, c.steps = 20, c.warmup = 0, c.lr = 3e-2;
  c.threads = 1, c.eval_every = 0, c.model.tie_head = tie_head, c.model.norm_eps = eps;
  const std::string text = "abcab cabba bacca ccab abba cab ";
  auto tok = build_tokenizer(c, text, "text");
  auto t = std::make_unique<Trainer>(c, tok, make_token_data(c, *tok, text));
  for (int i = 0; i < 5; ++i) t->train_step();
  return t;
}

// cos(g_S, w_S) and L(1.7 w_S) / L(w_S) - 1 over the weights that write the residual stream.
std::pair<double, double> stream_invariance(Trainer& trainer) {
  Float64Loss f(trainer);
  auto& [model, loss] = f;
  std::vector<double> g(static_cast<size_t>(loss.size()));
  loss.gradient(g);
  double gw = 0, gg = 0, ww = 0;
  size_t k = 0;
  for (auto& [name, p] : model->named_parameters())
    for (int64_t i = 0; i < p->numel(); ++i, ++k)
      if (writes_stream(name)) gw += g[k] * p->value()[i], gg += g[k] * g[k], ww += p->value()[i] * p->value()[i];
  const double before = loss.value();
  for (auto& [name, p] : model->named_parameters())
    if (writes_stream(name))
      for (int64_t i = 0; i < p->numel(); ++i) p->value()[i] *= 1.7;
  return {gw / std::sqrt(gg * ww), loss.value() / before - 1};
}
}  // namespace

TEST_CASE("sharpness: the weights that write the residual stream are a scale-invariant set of a pre-norm decoder with an untied head", "[sharpness]") {
  // Lyu, Li & Arora's premise, checked on the set the anatomy reports: with ε ≈ 0 the loss does
  // not change when the set is scaled, and its gradient is orthogonal to it.
  const auto [cos_untied, change_untied] = stream_invariance(*prenorm_trainer(false, 1e-30));
  INFO("untied, eps 1e-30: cos(g_S, w_S) " << cos_untied << ", L(1.7 w_S)/L - 1 " << change_untied);
  CHECK(std::abs(cos_untied) < 1e-9);
  CHECK(std::abs(change_untied) < 1e-12);
  // A tied head reads the token table, one of the writers: no longer invariant.
  const auto [cos_tied, change_tied] = stream_invariance(*prenorm_trainer(true, 1e-30));
  INFO("tied: cos " << cos_tied << ", change " << change_tied);
  CHECK(std::abs(cos_tied) > 1e-3);
  CHECK(std::abs(change_tied) > 1e-4);
  // The groups: every parameter in one, the writers among embeddings and the output projections.
  CHECK(parameter_group("wte.weight") == 0);
  CHECK(parameter_group("blocks.1.attn.qkv.bias") == 1);
  CHECK(parameter_group("blocks.1.attn.proj.weight") == 2);
  CHECK(parameter_group("blocks.0.mlp.fc.weight") == 3);
  CHECK(parameter_group("blocks.0.mlp.proj.bias") == 4);
  CHECK(parameter_group("blocks.0.attn.q_norm.weight") == 5);
  CHECK(parameter_group("norm_f.weight") == 5);
  CHECK(parameter_group("lm_head.weight") == 6);
  CHECK(parameter_group("blocks.0.my_module.w") == 7);
  CHECK(writes_stream("wpe.weight"));
  CHECK_FALSE(writes_stream("embed_scale.weight"));
  CHECK_FALSE(writes_stream("blocks.0.attn.qkv.weight"));
}

TEST_CASE("sharpness: the anatomy of the top eigenvector against the dense Hessian", "[sharpness]") {
  auto trainer = prenorm_trainer(false, 1e-5);
  Float64Loss f(*trainer);
  auto& [model, loss] = f;
  const Eigen::MatrixXd h = dense_hessian(loss);
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(0.5 * (h + h.transpose()));
  const Eigen::VectorXd y = eig.eigenvectors().col(eig.eigenvalues().size() - 1);
  Eigen::VectorXd g(loss.size());
  loss.gradient({g.data(), static_cast<size_t>(g.size())});
  const Sharpness s = measure_sharpness(*trainer, 3e-2, {.iters = 400, .tol = 1e-12});
  REQUIRE(s.top_mass.size() == parameter_groups().size());
  CHECK_THAT(s.step_curvature, Catch::Matchers::WithinRel(g.dot(h * g) / g.squaredNorm(), 1e-6));
  CHECK_THAT(s.top_step_overlap, Catch::Matchers::WithinRel(std::pow(y.dot(g), 2) / g.squaredNorm(), 1e-4));
  // Mass per group: the dense eigenvector's, summing to 1; weight norms: the model's.
  std::vector<double> mass(parameter_groups().size(), 0.0), norm2(mass.size(), 0.0);
  double yw = 0, ww = 0;
  int64_t k = 0;
  for (auto& [name, p] : model->named_parameters())
    for (int64_t i = 0; i < p->numel(); ++i, ++k) {
      mass[parameter_group(name)] += y(k) * y(k), norm2[parameter_group(name)] += p->value()[i] * p->value()[i];
      if (writes_stream(name)) yw += y(k) * p->value()[i], ww += p->value()[i] * p->value()[i];
    }
  double total = 0;
  for (size_t i = 0; i < mass.size(); ++i) {
    INFO(parameter_groups()[i]);
    CHECK(s.top_mass[i] == Approx(mass[i]).margin(1e-6));
    CHECK(s.weight_norm[i] == Approx(std::sqrt(norm2[i])).epsilon(1e-12));
    total += s.top_mass[i];
  }
  CHECK(total == Approx(1).epsilon(1e-9));
  CHECK(s.top_mass[6] > 0);  // the untied head is a group of its own
  CHECK(s.top_mass[7] == 0);
  CHECK(s.stream_radial_mass == Approx(yw * yw / ww).margin(1e-6));
  // The curve's columns and the metrics line carry every value under one name.
  const auto values = sharpness_values(s);
  const nlohmann::json line = sharpness_line(7, s);
  for (const auto& [name, v] : values) {
    INFO(name);
    if (std::isnan(v)) CHECK(line.at(name).dump() == "null");  // the batch ones: not measured
    else CHECK(line.at(name).get<double>() == v);
  }
  CHECK(values.size() == 9 + 2 * parameter_groups().size());
  for (const auto& [name, v] : sharpness_values(Sharpness::unmeasured())) CHECK(std::isnan(v));
}

TEST_CASE("sharpness: batch sharpness over fresh batches — at most their top eigenvalues, new batches each step, the run untouched", "[sharpness]") {
  auto trainer = tiny_trainer();
  const std::vector<int32_t> before(trainer->batch_ids().begin(), trainer->batch_ids().end());
  const Sharpness a = measure_sharpness(*trainer, 1e-2, {.iters = 200, .tol = 1e-10, .batches = 3});
  const Sharpness again = measure_sharpness(*trainer, 1e-2, {.iters = 200, .tol = 1e-10, .batches = 3});
  CHECK(a.batch_sharpness == again.batch_sharpness);  // the same step draws the same batches
  CHECK(std::isfinite(a.batch_sharpness));  // may be negative: the loss is not convex
  CHECK(a.batch_sharpness <= a.batch_lambda_max * (1 + 1e-6));
  CHECK(std::equal(before.begin(), before.end(), trainer->batch_ids().begin()));
  const Sharpness none = measure_sharpness(*trainer, 1e-2, {.iters = 200, .tol = 1e-10});
  CHECK(std::isnan(none.batch_sharpness));
  CHECK(none.value == a.value);  // the fixed batch's measurement does not depend on the fresh ones
  trainer->train_step();
  const Sharpness later = measure_sharpness(*trainer, 1e-2, {.iters = 200, .tol = 1e-10, .batches = 3});
  CHECK(later.batch_sharpness != a.batch_sharpness);
}

TEST_CASE("full batch: every step trains on one batch, the sharpness is that batch's loss, and a resume continues bitwise", "[sharpness][train]") {
  TrainConfig c;
  c.model.layers = 1, c.model.heads = 1, c.model.dim = 4, c.model.ctx = 3, c.batch = 4, c.steps = 6, c.warmup = 0, c.lr = 1e-2;
  c.min_lr = c.lr, c.optimizer = "sgd", c.momentum = 0, c.clip = 0, c.weight_decay = 0;
  c.threads = 1, c.eval_every = 0, c.full_batch = true;
  const std::string text = "abcab cabba bacca ccab abba cab ";
  auto tok = build_tokenizer(c, text, "text");
  const auto data = make_token_data(c, *tok, text);
  Trainer t(c, tok, data);
  const std::vector<int32_t> ids(t.batch_ids().begin(), t.batch_ids().end());
  const std::vector<int32_t> targets(t.batch_targets().begin(), t.batch_targets().end());
  REQUIRE(static_cast<int64_t>(ids.size()) == c.batch * c.model.ctx);
  // The full batch is the first batch a mini-batch run of the same seed trains on.
  c.full_batch = false;
  Trainer mini(c, tok, data);
  mini.train_step();
  CHECK(std::equal(ids.begin(), ids.end(), mini.batch_ids().begin()));
  // Gradient descent on one loss: each step's loss is the batch's loss before it, and falls (the
  // sharpness, about 50, is below 2/lr = 200: a step this small cannot overshoot).
  std::vector<double> losses;
  for (int s = 0; s < 4; ++s) {
    const double before = t.loss_on(ids, targets, c.batch, c.model.ctx);
    const StepResult r = t.train_step();
    CHECK_THAT(r.loss, Catch::Matchers::WithinRel(before, 1e-6));
    if (!losses.empty()) CHECK(r.loss < losses.back());
    losses.push_back(r.loss);
    CHECK(std::equal(ids.begin(), ids.end(), t.batch_ids().begin()));
  }
  // The sharpness is measured on that batch: the same number as on the batch given explicitly.
  const Sharpness on_run = measure_sharpness(t, c.lr);
  const Sharpness on_batch = measure_sharpness(*t.decoder(), t.optimizer(), ids, targets, c.batch, c.model.ctx, c.lr);
  CHECK(on_run.value == on_batch.value);
  CHECK(on_run.threshold == 2 / c.lr);
  // Resumed from a checkpoint after 2 steps, the run continues on the same batch, bit for bit.
  c.full_batch = true;
  Trainer first(c, tok, data);
  for (int s = 0; s < 2; ++s) first.train_step();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "tapegrad_test_full_batch";
  std::filesystem::remove_all(dir);
  save_checkpoint(first, dir.string());
  auto resumed = resume_trainer(dir.string(), {.text = text});
  for (int s = 2; s < 4; ++s) CHECK(resumed->train_step().loss == losses[static_cast<size_t>(s)]);
  std::filesystem::remove_all(dir);
  // Settings that would measure another batch are refused.
  TrainConfig bad = c;
  bad.full_batch = true, bad.sharpness_batch = 2;
  CHECK_THROWS_WITH(bad.validate(), Catch::StartsWith("sharpness-batch 2 with full-batch"));
  bad.sharpness_batch = 0, bad.batch_sharpness = 2, bad.sharpness_every = 1;
  CHECK_THROWS_WITH(bad.validate(), Catch::StartsWith("batch-sharpness 2 with full-batch"));
  bad.full_batch = false, bad.sharpness_every = 0;
  CHECK_THROWS_WITH(bad.validate(), "batch-sharpness 2 needs sharpness-every (it is measured at the sharpness measurements)");
}
