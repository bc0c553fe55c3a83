#include "tapegrad/lm/sharpness.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <map>

#include "tapegrad/hessian.h"
#include "tapegrad/lanczos.h"
#include "tapegrad/optim/optimizer.h"

namespace tapegrad::lm {

BatchLoss::BatchLoss(nn::Decoder<double>& model, std::vector<int32_t> ids, std::vector<int32_t> targets, int64_t B,
                     int64_t T)
    : model_(model), ids_(std::move(ids)), targets_(std::move(targets)), B_(B), T_(T), params_(model.parameters()) {
  check(static_cast<int64_t>(ids_.size()) == B * T && targets_.size() == ids_.size(), "BatchLoss: ", ids_.size(),
        " ids and ", targets_.size(), " targets for a batch of ", B, " x ", T);
  size_ = flat_size(params_);
}

double BatchLoss::value() {
  tape_.clear();
  auto guard = tape_.no_grad();
  return model_.forward(tape_, ids_, B_, T_, targets_).loss.value()[0];
}

void BatchLoss::gradient(std::span<double> g) {
  model_.zero_grad();
  tape_.clear();
  tape_.backward(model_.forward(tape_, ids_, B_, T_, targets_).loss);
  int64_t k = 0;
  for (const Parameter<double>* p : params_)
    for (int64_t i = 0; i < p->numel(); ++i) g[static_cast<size_t>(k++)] = p->grad()[i];
}

void BatchLoss::hvp(std::span<const double> v, std::span<double> hv) {
  hessian_vector_product(params_, [this](std::span<double> g) { gradient(g); }, v, hv);
}

double directional_curvature(BatchLoss& loss) {
  std::vector<double> g(static_cast<size_t>(loss.size())), hg(g.size());
  loss.gradient(g);
  loss.hvp(g, hg);
  double ghg = 0, gg = 0;
  for (size_t i = 0; i < g.size(); ++i) ghg += g[i] * hg[i], gg += g[i] * g[i];
  return gg > 0 ? ghg / gg : 0.0;
}

std::unique_ptr<nn::Decoder<double>> to_float64(nn::Decoder<float>& model) {
  auto copy = std::make_unique<nn::Decoder<double>>(model.config(), 0);
  for (auto& [name, p] : model.named_parameters()) {
    Parameter<double>& q = copy->parameter(name);
    for (int64_t i = 0; i < p->numel(); ++i) q.value()[i] = p->value()[i];
  }
  return copy;
}

void sharpness_batch(Trainer& trainer, const SharpnessOptions& o, std::vector<int32_t>& ids,
                     std::vector<int32_t>& targets, int64_t& B) {
  const TrainConfig& c = trainer.config();
  if (c.full_batch) {
    B = c.batch;
    check(!trainer.batch_ids().empty(), "measure_sharpness: the trainer holds no full batch");
    ids.assign(trainer.batch_ids().begin(), trainer.batch_ids().end());
    targets.assign(trainer.batch_targets().begin(), trainer.batch_targets().end());
    return;
  }
  B = o.batch > 0 ? o.batch : c.batch;
  BatchSampler sampler(trainer.data().train, B, c.model.ctx, o.seed ^ c.seed);
  sampler.next(ids, targets);
}

SharpnessOptions sharpness_options(const TrainConfig& c) {
  return {.iters = static_cast<int>(c.sharpness_iters), .batch = c.sharpness_batch, .batches = c.batch_sharpness};
}

double edge_ratio(const Sharpness& s) {
  return std::isnan(s.preconditioned) ? s.value / s.threshold : s.preconditioned / s.preconditioned_threshold;
}

const std::vector<std::string>& parameter_groups() {
  static const std::vector<std::string> groups = {"embeddings", "attn_in", "attn_out", "mlp_in",
                                                  "mlp_out",    "norms",   "head",     "other"};
  return groups;
}

size_t parameter_group(const std::string& name) {
  // Paths are module names joined by '.': the module a parameter belongs to decides its group.
  const auto has = [&](const char* part) { return name.find(part) != std::string::npos; };
  const auto starts = [&](const std::string& module) {  // the path's first module (after any prefix)
    return name.rfind(module, 0) == 0 || has(("." + module).c_str());
  };
  size_t g = 7;
  if (starts("wte.") || starts("wpe.") || starts("embed_scale.")) g = 0;
  else if (has("norm")) g = 5;  // norm1, norm2, norm_f, q_norm, embed_norm, ...: before the projections
  else if (has(".attn.qkv.")) g = 1;
  else if (has(".attn.proj.")) g = 2;
  else if (has(".mlp.fc.")) g = 3;
  else if (has(".mlp.proj.")) g = 4;
  else if (starts("lm_head.")) g = 6;
  return g;
}

bool writes_stream(const std::string& name) {
  // The embedding scale multiplies what the tables write; scaling the tables scales the stream.
  const size_t g = parameter_group(name);
  return (g == 0 && name.find("embed_scale.") == std::string::npos) || g == 2 || g == 4;
}

Sharpness Sharpness::unmeasured() {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  Sharpness s;
  s.value = s.threshold = s.residual = nan;
  s.preconditioned = s.preconditioned_threshold = s.preconditioned_residual = nan;
  s.batch_sharpness = s.batch_lambda_max = nan;
  s.step_curvature = s.top_step_overlap = s.stream_radial_mass = nan;
  s.top_mass.assign(parameter_groups().size(), nan);
  s.weight_norm.assign(parameter_groups().size(), nan);
  return s;
}

std::vector<std::pair<std::string, double>> sharpness_values(const Sharpness& s) {
  std::vector<std::pair<std::string, double>> v = {{"sharpness", s.value},
                                                   {"sharpness_threshold", s.threshold},
                                                   {"precond_sharpness", s.preconditioned},
                                                   {"precond_threshold", s.preconditioned_threshold},
                                                   {"batch_sharpness", s.batch_sharpness},
                                                   {"batch_lambda_max", s.batch_lambda_max},
                                                   {"step_curvature", s.step_curvature},
                                                   {"top_step_overlap", s.top_step_overlap},
                                                   {"stream_radial_mass", s.stream_radial_mass}};
  const auto& groups = parameter_groups();
  const auto at = [](const std::vector<double>& x, size_t g) {
    return g < x.size() ? x[g] : std::numeric_limits<double>::quiet_NaN();
  };
  for (size_t g = 0; g < groups.size(); ++g) v.emplace_back("top_mass_" + groups[g], at(s.top_mass, g));
  for (size_t g = 0; g < groups.size(); ++g) v.emplace_back("weight_norm_" + groups[g], at(s.weight_norm, g));
  return v;
}

nlohmann::json sharpness_line(int64_t step, const Sharpness& s) {
  nlohmann::json line = {{"step", step}};
  for (const auto& [name, value] : sharpness_values(s)) line[name] = value;
  line["sharpness_iters"] = s.iterations, line["sharpness_residual"] = s.residual;
  line["precond_iters"] = s.preconditioned_iterations, line["precond_residual"] = s.preconditioned_residual;
  line["sharpness_ms"] = s.ms;
  return line;
}

namespace {
// The anatomy of the top eigenvector y (unit) of `loss` at the model's weights (sharpness.h).
void anatomy(BatchLoss& loss, nn::Decoder<double>& model, const std::vector<double>& y, Sharpness& s) {
  const size_t n = static_cast<size_t>(loss.size()), groups = parameter_groups().size();
  std::vector<double> g(n), hg(n);
  loss.gradient(g);
  loss.hvp(g, hg);
  double ghg = 0, gg = 0, yg = 0;
  for (size_t i = 0; i < n; ++i) ghg += g[i] * hg[i], gg += g[i] * g[i], yg += y[i] * g[i];
  s.step_curvature = gg > 0 ? ghg / gg : 0.0;
  s.top_step_overlap = gg > 0 ? yg * yg / gg : 0.0;
  s.top_mass.assign(groups, 0.0);
  std::vector<double> norm2(groups, 0.0);
  double yw = 0, ww = 0;
  size_t k = 0;
  for (auto& [name, p] : model.named_parameters()) {
    const size_t group = parameter_group(name);
    const bool stream = writes_stream(name);
    for (int64_t i = 0; i < p->numel(); ++i, ++k) {
      check(k < n && k < y.size(), "measure_sharpness: the model has more weights than the loss (", n, ")");
      const double w = p->value()[i];
      s.top_mass[group] += y[k] * y[k], norm2[group] += w * w;
      if (stream) yw += y[k] * w, ww += w * w;
    }
  }
  check(k == n, "measure_sharpness: the model has ", k, " weights, the loss ", n);
  s.weight_norm.resize(groups);
  for (size_t i = 0; i < groups; ++i) s.weight_norm[i] = std::sqrt(norm2[i]);
  s.stream_radial_mass = ww > 0 ? yw * yw / ww : 0.0;
}

// λ₁(H) and λ₁(P⁻¹H) of `loss` (a float64 copy's), thresholds from the optimizer at step size lr.
Sharpness top_eigenvalues(BatchLoss& loss, nn::Decoder<double>& model, const Optimizer<float>& optimizer,
                          double lr, const LanczosOptions& lanczos) {
  check(lr > 0, "measure_sharpness: the learning rate must be positive, got ", lr);
  const int64_t n = loss.size();
  const LinearOperator hessian = [&](std::span<const double> x, std::span<double> y) { loss.hvp(x, y); };
  Sharpness s;
  const EigenEstimate plain = top_eigenvalue(n, hessian, lanczos);
  s.value = plain.value, s.iterations = plain.iterations, s.residual = plain.residual;
  anatomy(loss, model, plain.vector, s);
  // Gradient descent's threshold (2/lr, with heavy-ball momentum (2 + 2 mu)/lr) for the plain
  // sharpness; a preconditioned rule's threshold applies to P^-1 H.
  s.threshold = optimizer.preconditioned() ? 2 / lr : optimizer.stability_threshold(lr);
  s.preconditioned = s.preconditioned_threshold = s.preconditioned_residual = std::numeric_limits<double>::quiet_NaN();
  s.batch_sharpness = s.batch_lambda_max = std::numeric_limits<double>::quiet_NaN();
  if (const std::vector<std::vector<double>> precond = optimizer.preconditioner(); !precond.empty()) {
    // P^{-1/2} as a flat diagonal, in the order of the model's parameters.
    std::map<std::string, const std::vector<double>*> by_name;
    for (size_t k = 0; k < optimizer.params().size(); ++k) by_name[optimizer.params()[k]->name] = &precond[k];
    std::vector<double> d;
    d.reserve(static_cast<size_t>(n));
    for (auto& [name, p] : model.named_parameters()) {
      const auto it = by_name.find(name);
      check(it != by_name.end() && static_cast<int64_t>(it->second->size()) == p->numel(),
            "measure_sharpness: no preconditioner for parameter '", name, "'");
      for (const double pi : *it->second) d.push_back(1 / std::sqrt(pi));
    }
    std::vector<double> dx(static_cast<size_t>(n));
    const LinearOperator preconditioned = [&](std::span<const double> x, std::span<double> y) {
      for (size_t i = 0; i < dx.size(); ++i) dx[i] = d[i] * x[i];
      loss.hvp(dx, y);
      for (size_t i = 0; i < dx.size(); ++i) y[i] *= d[i];
    };
    const EigenEstimate pre = top_eigenvalue(n, preconditioned, lanczos);
    s.preconditioned = pre.value, s.preconditioned_iterations = pre.iterations, s.preconditioned_residual = pre.residual;
    s.preconditioned_threshold = optimizer.stability_threshold(lr);
  }
  return s;
}
}  // namespace

Sharpness measure_sharpness(nn::Decoder<float>& model, const Optimizer<float>& optimizer, std::vector<int32_t> ids,
                            std::vector<int32_t> targets, int64_t B, int64_t T, double lr, const SharpnessOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  auto model64 = to_float64(model);
  BatchLoss loss(*model64, std::move(ids), std::move(targets), B, T);
  Sharpness s = top_eigenvalues(loss, *model64, optimizer, lr, {.max_iters = o.iters, .tol = o.tol, .seed = o.seed});
  s.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

Sharpness measure_sharpness(Trainer& trainer, double lr, const SharpnessOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const TrainConfig& c = trainer.config();
  auto model = to_float64(trainer.decoder("sharpness"));
  std::vector<int32_t> ids, targets;
  int64_t B = 0;
  sharpness_batch(trainer, o, ids, targets, B);
  BatchLoss loss(*model, std::move(ids), std::move(targets), B, c.model.ctx);
  const int64_t n = loss.size();
  const LanczosOptions lanczos{.max_iters = o.iters, .tol = o.tol, .seed = o.seed};
  Sharpness s = top_eigenvalues(loss, *model, trainer.optimizer(), lr, lanczos);

  // Batch sharpness: K fresh training batches of the training batch size, from a generator of
  // the seed and the step (so each measurement sees new batches, and the run's stream is untouched).
  if (o.batches > 0) {
    BatchSampler fresh(trainer.data().train, c.batch, c.model.ctx,
                       (o.seed ^ c.seed) * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(trainer.step()));
    double directional = 0, top = 0;
    for (int64_t k = 0; k < o.batches; ++k) {
      std::vector<int32_t> bids, btargets;
      fresh.next(bids, btargets);
      BatchLoss batch(*model, std::move(bids), std::move(btargets), c.batch, c.model.ctx);
      directional += directional_curvature(batch);
      const LinearOperator h = [&](std::span<const double> x, std::span<double> y) { batch.hvp(x, y); };
      top += top_eigenvalue(n, h, lanczos).value;
    }
    s.batch_sharpness = directional / static_cast<double>(o.batches);
    s.batch_lambda_max = top / static_cast<double>(o.batches);
  }
  s.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

}  // namespace tapegrad::lm
