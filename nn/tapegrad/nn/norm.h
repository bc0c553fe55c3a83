// The norm registry: every normalisation a block, the final norm or QK-norm can use, declared once
// (norm.cpp: a line per built-in norm, as PyTorch's derivatives.yaml declares each op once).
// Everything else derives from it — command-line choices and their --help text, parsing and
// printing, error messages, the lab's default list, report labels, plot colours, tests that
// GENERATE over every norm — so adding a norm is one file pair (the module, with its hand-derived
// backward), one registration line and one test file.
//
// The registry is open (registry.h): a program or library built on tapegrad registers its own
// norm before using it by name, without touching tapegrad's sources —
//   const nn::NormKind l2 = nn::register_norm<L2Scale>("l2scale", "L2Scale", "x / ||x|| times a gain");
// after which `--norm l2scale`, lm::TrainConfig{.norm = nn::NormKind::parse("l2scale")} and the lab
// all know it. Handles (NormKind) stay valid as norms are added.
//
// A norm module M<T> (a UnaryModule) provides, for the registry:
//   static std::unique_ptr<UnaryModule<T>> from_spec(const NormSpec&);
// and, if it can run inside the fused attention as QK-norm:
//   static const NormRowKernels<T>* row_kernels();
// It initialises its own parameters (Module::reset_parameters).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tapegrad/nn/module.h"
#include "tapegrad/precision.h"
#include "tapegrad/registry.h"

namespace tapegrad::nn {

// What every norm is built from.
struct NormSpec {
  int64_t dim = 0;    // the normalised (last) dimension
  double eps = 1e-5;
  bool bias = true;   // an additive bias where the norm has one (QK-norm asks for none: a bias on k
                      // is cancelled by the softmax, so it would never get a gradient)
  double dyt_alpha = 0.5;  // DyT's initial alpha (dyt.h); other norms ignore it
  bool dyt_beta = true;    // DyT's additive beta (with `bias`); other norms ignore it
};

// A norm's row kernels, for QK-norm inside the fused attention node: forward normalises n rows of
// C and saves `stats_per_row` statistics per row; backward adds into dx and into each non-null
// dp[i]. p and dp: the module's parameters in registration order (QK-norm allows at most one).
// scratch: norm_backward_scratch(C) elements (norm_affine.h).
template <typename T>
struct NormRowKernels {
  int stats_per_row = 0;
  Shape (*param_shape)(int64_t C) = nullptr;  // the shape of the one parameter, for rows of C
  void (*forward)(T* y, T* stats, const T* x, const T* const* p, int64_t n, int64_t C, T eps) = nullptr;
  void (*backward)(T* dx, T* const* dp, const T* dy, const T* x, const T* stats, const T* const* p, int64_t n,
                   int64_t C, T* scratch) = nullptr;
};

// A function, not a pointer: a norm registered from another language captures its class.
template <typename T>
using NormFactory = std::function<std::unique_ptr<UnaryModule<T>>(const NormSpec&)>;

struct NormEntry {
  std::string name;         // as typed on the command line and stored in checkpoints
  std::string description;  // one line, for --help
  std::string label;        // for prose and plots: "LayerNorm"
  NormFactory<float> make_float = nullptr;
  NormFactory<double> make_double = nullptr;
  const NormRowKernels<float>* (*rows_float)() = nullptr;  // null: no QK-norm
  const NormRowKernels<double>* (*rows_double)() = nullptr;
  bool identity = false;  // "none": no module at all where a norm is optional (the final norm)

  template <typename T>
  std::unique_ptr<UnaryModule<T>> make(const NormSpec& spec) const {
    if constexpr (std::is_same_v<T, float>) return make_float(spec);
    else return make_double(spec);
  }
  template <typename T>
  const NormRowKernels<T>* row_kernels() const {
    if constexpr (std::is_same_v<T, float>) return rows_float ? rows_float() : nullptr;
    else return rows_double ? rows_double() : nullptr;
  }
};

// The registered norms, in registration order: the built-in ones, then those a program added.
Registry<NormEntry>& norm_registry();
std::vector<std::string> norm_names();
// "name: description" lines, for --help.
std::string norm_help();
// The registered norm's label ("LayerNorm"), or `name` itself if none is registered under it
// (e.g. a name read from an older sweep's records).
std::string norm_label(std::string_view name);

// A registered norm, by handle: cheap to copy and compare.
class NormKind {
 public:
  NormKind() : NormKind(none()) {}
  // Throws "unknown norm 'x'; known: layernorm, rmsnorm, ..." for a name the registry lacks.
  static NormKind parse(std::string_view name);
  static NormKind none() { return parse("none"); }
  // The handle of a registered entry (from norm_registry()).
  static NormKind of(const NormEntry& registered) { return NormKind(&registered); }

  const NormEntry& entry() const { return *entry_; }
  std::string_view name() const { return entry_->name; }
  bool is_none() const { return entry_->identity; }
  // "none" or a norm with row kernels: what QK-norm accepts.
  bool can_be_qk_norm() const { return is_none() || entry_->rows_float != nullptr; }
  bool operator==(const NormKind& o) const { return entry_ == o.entry_; }

 private:
  explicit NormKind(const NormEntry* entry) : entry_(entry) {}
  const NormEntry* entry_;
};

// Every registered norm, for tests that GENERATE over the registry.
std::vector<NormKind> all_norms();
// Those that can be a QK-norm, "none" first among them only if `with_none`.
std::vector<NormKind> qk_norms(bool with_none = true);
std::string qk_norm_names();  // qk_norms(), comma-separated: "none, layernorm, rmsnorm, ..."
std::string to_string(NormKind kind);

// The entry of a norm module template M (float and double), as a registration takes it; M provides
// `static std::unique_ptr<UnaryModule<T>> from_spec(const NormSpec&)` and, to serve as QK-norm,
// `static const NormRowKernels<T>* row_kernels()`.
template <template <typename> class M>
NormEntry norm_entry(std::string name, std::string label, std::string description, bool identity = false) {
  NormEntry e{std::move(name), std::move(description), std::move(label), &M<float>::from_spec, &M<double>::from_spec};
  if constexpr (requires { M<float>::row_kernels(); }) {
    e.rows_float = &M<float>::row_kernels;
    e.rows_double = &M<double>::row_kernels;
  }
  e.identity = identity;
  return e;
}

// Registers a norm; throws if the name is taken or malformed (registry.h).
inline NormKind register_norm(NormEntry entry) { return NormKind::of(norm_registry().add(std::move(entry))); }
template <template <typename> class M>
NormKind register_norm(std::string name, std::string label, std::string description) {
  return register_norm(norm_entry<M>(std::move(name), std::move(label), std::move(description)));
}

template <typename T>
std::unique_ptr<UnaryModule<T>> make_norm(NormKind kind, const NormSpec& spec) {
  return kind.entry().make<T>(spec);
}

// norm(x) at the thread's norm precision (precision.h): float32, or as a bf16 implementation
// computes it — its input and output bf16 tensors (to_bf16 at both boundaries, the gradient
// rounded as it crosses them), the statistics accumulated in float32 as PyTorch's and llm.c's bf16
// LayerNorm kernels do. How each block and the final norm apply their norms; QK-norm, inside the
// fused attention, stays float32.
template <typename T>
Var<T> apply_norm(UnaryModule<T>& norm, Var<T> x);

// "none": the identity.
template <typename T = float>
class Identity : public UnaryModule<T> {
 public:
  static std::unique_ptr<UnaryModule<T>> from_spec(const NormSpec&) { return std::make_unique<Identity>(); }
  Var<T> forward(Var<T> x) override { return x; }
  std::string type_name() const override { return "Identity"; }
};

}  // namespace tapegrad::nn
