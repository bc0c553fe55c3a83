// Sharpness — the top eigenvalue of the training loss's Hessian — and its Adam-preconditioned
// form, the quantities of the edge-of-stability literature:
//   Cohen et al. 2021: under gradient descent with step η the sharpness λ₁(H) rises until it
//     reaches 2/η (with heavy-ball momentum μ: (2 + 2μ)/η) and hovers there;
//   Cohen et al. 2022: under Adam the preconditioned sharpness λ₁(P⁻¹H), with
//     P = (1 − β₁ᵗ) diag(√v̂ + ε) from the optimizer's state, does the same at
//     (2 + 2β₁)/((1 − β₁) η) — 38/η at β₁ = 0.9.
// λ₁(P⁻¹H) is computed as λ₁(P^{-1/2} H P^{-1/2}), a symmetric matrix with the same spectrum.
//
// A measurement copies the model into float64 (rounding in float32 would swamp the finite
// differences), draws a fixed batch of `batch` sequences from the training data (the same batch
// every time: the curve follows the weights, not the batch) — under full-batch training the
// full batch itself, so the sharpness is that of the very loss being descended — and runs
// Lanczos over Hessian-vector products (hessian.h, lanczos.h) — two float64 forward+backward
// passes per product. It changes nothing in the run: the float32 weights, the optimizer and the
// batch stream are untouched.
//
// Mini-batch training descends a different loss every step, and what settles at 2/η there is
// the batch sharpness (Andreyev & Beneventano 2024, "Edge of Stochastic Stability"):
//   E_B[ g_Bᵀ H_B g_B / g_Bᵀ g_B ],  g_B, H_B the gradient and Hessian of batch B's loss,
// the curvature of each batch's loss along the step taken on it. With `batches` = K > 0 it is
// estimated over K fresh training batches (drawn anew at every measurement, from a generator of
// the run's seed and the step, never the training stream), with the mean of their Hessians'
// top eigenvalues λ₁(H_B) beside it.
//
// Where the sharpness lives (its anatomy), to tell apart why it may sit above 2/η. A loss that
// is scale-invariant in a set S of weights (L(c·w_S) = L(w_S), c > 0) has a gradient orthogonal to
// w_S and a Hessian that scales as 1/c²: GD on S is GD on the unit sphere with the effective
// step η/‖w_S‖² (Lyu, Li & Arora 2022, "Understanding the Generalization Benefit of Normalization
// Layers: Sharpness Reduction"; Arora, Li & Panigrahi 2022). The product η·λ₁ is the same in both
// pictures, so the threshold on λ₁(H) stays 2/η; what changes is the way back below it: each step
// grows ‖w_S‖² by η²‖g_S‖² (Pythagoras, g_S ⊥ w_S), so an oscillation across a sharp valley
// lowers λ₁ ∝ 1/‖w_S‖² instead of blowing up, and along a great circle the loss is bounded. In a
// pre-norm decoder with a final norm and an untied head, S is every weight that writes the
// residual stream (the embeddings, attention's and the MLP's output projections, with their
// biases): scaled together they scale the stream, which every reader normalises (up to ε).
// Measured with the top eigenvector y (unit): its mass ‖y_G‖² per parameter group G, its radial
// part (yᵀw_S)²/‖w_S‖², each group's weight norm ‖w_G‖, the curvature along the step gᵀHg/gᵀg
// (for GD, the quadratic model decreases the loss along −ηg only if that is below 2/η) and the
// fraction of the step on y, (yᵀg)²/gᵀg.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tapegrad/lm/trainer.h"

namespace tapegrad::lm {

// The mean cross-entropy of a float64 decoder on one batch (ids, targets: B x T, row-major), as a
// function of the decoder's weights: its value, gradient and Hessian-vector products (flat, in
// the order of model.parameters()). The model's weights are moved and restored by hvp().
class BatchLoss {
 public:
  BatchLoss(nn::Decoder<double>& model, std::vector<int32_t> ids, std::vector<int32_t> targets, int64_t B, int64_t T);
  double value();
  void gradient(std::span<double> g);
  void hvp(std::span<const double> v, std::span<double> hv);
  const std::vector<Parameter<double>*>& params() const { return params_; }
  int64_t size() const { return size_; }

 private:
  nn::Decoder<double>& model_;
  std::vector<int32_t> ids_, targets_;
  int64_t B_, T_, size_;
  std::vector<Parameter<double>*> params_;
  Tape<double> tape_;
};

// gᵀ H g / gᵀ g with g, H the gradient and Hessian of `loss` at the model's weights: the
// curvature along the gradient step (0 where the gradient is 0). One gradient and one product.
double directional_curvature(BatchLoss& loss);

// A float64 copy of a decoder, weight for weight.
std::unique_ptr<nn::Decoder<double>> to_float64(nn::Decoder<float>& model);

// The parameter groups of the anatomy, in column order: embeddings (tokens, positions, their
// scale), attention's input (qkv) and output projections, the MLP's input and output, every norm's
// parameters, an untied head, and anything else (a user's module).
const std::vector<std::string>& parameter_groups();
// The group of a parameter by its path in the model ("blocks.0.attn.proj.weight" -> attn_out).
size_t parameter_group(const std::string& name);
// Whether the parameter writes the residual stream (the set S above).
bool writes_stream(const std::string& name);

struct SharpnessOptions {
  int iters = 20;          // Lanczos steps at most, per eigenvalue
  double tol = 1e-3;       // stop when the Ritz residual is below this x the value (lanczos.h)
  int64_t batch = 0;       // sequences in the fixed batch; 0: the training batch size
  int64_t batches = 0;     // K fresh batches for the batch sharpness; 0: not measured
  uint64_t seed = 0x5a4e;  // of the batch and of Lanczos' start vector
};

struct Sharpness {
  double value = 0;      // λ₁(H)
  double threshold = 0;  // 2/η for gradient descent ((2 + 2μ)/η with momentum μ)
  int iterations = 0;
  double residual = 0;   // ‖H y − λ y‖ for the unit Ritz vector y
  // λ₁(P⁻¹H) and (2 + 2β₁)/((1 − β₁) η) under AdamW; NaN for other optimizers.
  double preconditioned = 0, preconditioned_threshold = 0;
  int preconditioned_iterations = 0;
  double preconditioned_residual = 0;
  // Over the K fresh batches (NaN when K = 0): the mean of g_Bᵀ H_B g_B / g_Bᵀ g_B, and of λ₁(H_B).
  double batch_sharpness = 0, batch_lambda_max = 0;
  // The anatomy (above), of the measured loss and its top eigenvector; per parameter_groups().
  double step_curvature = 0, top_step_overlap = 0, stream_radial_mass = 0;
  std::vector<double> top_mass, weight_norm;
  double ms = 0;  // wall time of the whole measurement

  // Every value, NaN, with its groups: what a step without a measurement records.
  static Sharpness unmeasured();
};

// The values a curve records per measurement, named, in column order: the six of the edge
// (sharpness, sharpness_threshold, precond_sharpness, precond_threshold, batch_sharpness,
// batch_lambda_max), then the anatomy (step_curvature, top_step_overlap, stream_radial_mass,
// top_mass_<group>..., weight_norm_<group>...). Columns and JSON keys are these names.
std::vector<std::pair<std::string, double>> sharpness_values(const Sharpness& s);

// The options a run's settings ask for (--sharpness-iters, --sharpness-batch, --batch-sharpness).
SharpnessOptions sharpness_options(const TrainConfig& config);

// The sharpness the optimizer's stability depends on, as a fraction of its threshold: the
// preconditioned one under AdamW, the plain one under SGD. >= 1: at or past the edge of stability.
double edge_ratio(const Sharpness& s);

// `lr`: the step size η the thresholds refer to (the schedule's value at this step).
Sharpness measure_sharpness(Trainer& trainer, double lr, const SharpnessOptions& options = {});
// The plain and (with the optimizer's state) preconditioned top eigenvalues of the loss of
// `model` on the batch given (ids, targets: B x T, row-major); options.batch and .batches unused.
Sharpness measure_sharpness(nn::Decoder<float>& model, const Optimizer<float>& optimizer, std::vector<int32_t> ids,
                            std::vector<int32_t> targets, int64_t B, int64_t T, double lr,
                            const SharpnessOptions& options = {});

// A metrics line: {"step", every sharpness_values() name, "sharpness_iters", "sharpness_residual",
// "precond_iters", "precond_residual", "sharpness_ms"} (NaN fields — the preconditioned ones for
// optimizers other than AdamW, the batch ones when not measured — are null).
nlohmann::json sharpness_line(int64_t step, const Sharpness& s);

// The fixed batch a measurement uses: under full-batch training the full batch; otherwise
// options.batch (or the training batch size) sequences of the training data, drawn from a
// generator seeded by options.seed and the run's seed.
void sharpness_batch(Trainer& trainer, const SharpnessOptions& options, std::vector<int32_t>& ids,
                     std::vector<int32_t>& targets, int64_t& B);

}  // namespace tapegrad::lm
