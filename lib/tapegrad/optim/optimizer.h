// Optimizer: updates parameters from their accumulated gradients. Subclasses keep per-parameter
// state (moments) as named tensors so checkpoints can save and restore it exactly.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tapegrad/parallel.h"
#include "tapegrad/parameter.h"
#include "tapegrad/state_dict.h"

namespace tapegrad {

// How a weight decay rate lambda enters an update at learning rate lr, where decay applies:
//   lr-scaled    w -= lr lambda w             torch.optim.AdamW's weight_decay — decoupled from
//                                             the gradient, as Loshchilov & Hutter 2019 define
//                                             AdamW, but scaled by the lr; SGD's L2 term
//                                             g + lambda w, as torch.optim.SGD (the tapegrad name
//                                             before 2026-12 was "coupled", still read)
//   independent  w -= (lr / peak_lr) lambda w  decoupled from the lr (Loshchilov & Hutter 2019's
//                                             "schedule multiplier" eta_t times lambda; Wortsman
//                                             et al. 2023's "independent" decay): the decay per
//                                             step is lambda at the schedule's peak, whatever lr
//                                             the run uses, and follows the schedule's shape.
// With peak_lr 0, (lr / peak_lr) is taken as 1 (a constant lambda per step).
enum class WeightDecayMode { kLrScaled, kIndependent };
// "lr-scaled" | "independent"; the former name "coupled" is read as "lr-scaled" (old checkpoints
// and sweep folders).
WeightDecayMode parse_weight_decay_mode(const std::string& name);
std::string to_string(WeightDecayMode mode);
std::vector<std::string> weight_decay_mode_names();

struct WeightDecay {
  double rate = 0;  // lambda
  WeightDecayMode mode = WeightDecayMode::kLrScaled;
  double peak_lr = 0;  // the schedule's peak, for the independent form
  // The factor f in w -= f w for a step at learning rate lr (SGD's lr-scaled form enters through
  // the gradient instead).
  double per_step(double lr) const {
    if (mode == WeightDecayMode::kLrScaled) return lr * rate;
    return (peak_lr > 0 ? lr / peak_lr : 1.0) * rate;
  }
};

template <typename T = float>
class Optimizer {
 public:
  explicit Optimizer(std::vector<Parameter<T>*> params) : params_(std::move(params)) {}
  virtual ~Optimizer() = default;

  // One update with the current gradients, multiplied by grad_scale, at learning rate `lr`.
  // Parameters with requires_grad = false are frozen: neither updated nor decayed.
  // Clipping by global norm is grad_scale = min(1, max_norm / norm) (see clip.h): folding it into
  // the update saves a read-and-write pass over every gradient.
  virtual void step(double lr, double grad_scale = 1.0) = 0;
  // step(), also writing each parameter's update size squares[k] = |w_after - w_before|^2 (in
  // double, params() order; 0 for a frozen one): the update-to-weight ratio's numerator
  // (lm/instrument.h). This default copies the weights around step(), a copy and a pass over
  // every weight; an optimizer that can take the sums inside its own update pass overrides it
  // (AdamW).
  virtual void step_measured(double lr, double grad_scale, std::span<double> squares);
  // Named state tensors ("exp_avg.blocks.0.attn.qkv.weight", ...), for checkpoints.
  virtual std::vector<std::pair<std::string, Tensor<T>*>> state() = 0;
  // The same, as a state dict (state_dict.h); with steps(), everything a resume needs
  // (io::save_optimizer / io::load_optimizer keep both).
  StateDict<T> state_dict() { return state(); }

  void zero_grad() {
    parallel_for_arrays(
        static_cast<int64_t>(params_.size()), [this](int64_t k) { return params_[static_cast<size_t>(k)]->numel(); }, 1,
        [this](int64_t k, int64_t i0, int64_t i1) {
          T* const g = params_[static_cast<size_t>(k)]->grad().data();
          std::fill(g + i0, g + i1, T(0));
        });
  }
  // For sharpness measurements (Cohen et al. 2021; 2022). An update w -= lr P^-1 u is
  // "preconditioned" when P is a diagonal it adapts (Adam's sqrt(v_hat) + eps); preconditioner()
  // gives P per parameter, in params() order, once there is one (after the first step).
  virtual bool preconditioned() const { return false; }
  virtual std::vector<std::vector<double>> preconditioner() const { return {}; }
  // The edge of stability of the update at learning rate lr: the sharpness (of P^-1 H, when
  // preconditioned) above which it diverges on a quadratic of that curvature — 2/lr for gradient
  // descent.
  virtual double stability_threshold(double lr) const { return 2 / lr; }

  int64_t steps() const { return steps_; }
  void set_steps(int64_t n) { steps_ = n; }
  const std::vector<Parameter<T>*>& params() const { return params_; }

 protected:
  // Calls update(k, w, g, begin, end) on the threads' shares of every parameter k that is not
  // frozen (requires_grad = false: neither updated nor decayed, as in torch), w its values and g
  // its gradient, all in one parallel region (parallel_for_arrays). Updates are element-wise, so
  // the results do not depend on the thread count.
  template <typename Update>
  void for_each_update(int64_t work_per_element, Update&& update) {
    const auto updated = [this](int64_t k) {
      const Parameter<T>& p = *params_[static_cast<size_t>(k)];
      return p.requires_grad ? p.numel() : int64_t{0};
    };
    parallel_for_arrays(static_cast<int64_t>(params_.size()), updated, work_per_element,
                        [&](int64_t k, int64_t begin, int64_t end) {
                          Parameter<T>& p = *params_[static_cast<size_t>(k)];
                          update(static_cast<size_t>(k), p.value().data(), static_cast<const T*>(p.grad().data()), begin, end);
                        });
  }

  // for_each_update for an update that returns the sum of its squared changes over [begin, end):
  // squares[k] gets parameter k's total, its threads' shares added in chunk order.
  template <typename Update>
  void for_each_measured_update(int64_t work_per_element, std::span<double> squares, Update&& update) {
    check_measured(squares);
    const size_t P = params_.size(), chunks = static_cast<size_t>(num_threads());
    chunk_squares_.assign(chunks * P, 0.0);  // allocates only when the thread count grows
    const auto updated = [this](int64_t k) {
      const Parameter<T>& p = *params_[static_cast<size_t>(k)];
      return p.requires_grad ? p.numel() : int64_t{0};
    };
    parallel_for_arrays(static_cast<int64_t>(P), updated, work_per_element,
                        [&](int64_t chunk, int64_t k, int64_t begin, int64_t end) {
                          Parameter<T>& p = *params_[static_cast<size_t>(k)];
                          chunk_squares_[static_cast<size_t>(chunk) * P + static_cast<size_t>(k)] =
                              update(static_cast<size_t>(k), p.value().data(),
                                     static_cast<const T*>(p.grad().data()), begin, end);
                        });
    for (size_t k = 0; k < P; ++k) {
      double sum = 0;
      for (size_t c = 0; c < chunks; ++c) sum += chunk_squares_[c * P + k];
      squares[k] = sum;
    }
  }
  void check_measured(std::span<double> squares) const;

  std::vector<Parameter<T>*> params_;
  int64_t steps_ = 0;

 private:
  std::vector<Tensor<T>> snapshots_;   // step_measured's default: the weights before the step
  std::vector<double> chunk_squares_;  // for_each_measured_update's partial sums, chunk-major
};

}  // namespace tapegrad
