#include "tapegrad/nn/block.h"

#include <cmath>

#include "tapegrad/nn/init.h"
#include "tapegrad/ops/add.h"
#include "tapegrad/ops/scale.h"
#include "tapegrad/vmath.h"

namespace tapegrad::nn {

// A block composes tape nodes (norm, attention, add, norm, MLP, add); each has its own backward,
// and the residual adds route the gradient around the sub-layers unchanged (d(X + F(X))/dX = I + F').

namespace {
struct PlacementEntry {
  std::string name;
  Placement placement;
  std::string description;
};

// The one list of placements, in the order of --help and the lab; everything else derives from it.
const std::vector<PlacementEntry>& placements() {
  static const std::vector<PlacementEntry> table{
      {"pre", Placement::kPre, "X + F(Norm(X))"},
      {"post", Placement::kPost, "Norm(X + F(X))"},
      {"peri", Placement::kPeri, "X + Norm(F(Norm(X))): the sub-layer's output normalised too (Peri-LN)"},
      {"deepnorm", Placement::kDeepNorm, "Norm(alpha X + F(X)), alpha = (2N)^(1/4), beta-scaled init (DeepNet)"}};
  return table;
}
}  // namespace

Placement parse_placement(const std::string& name) {
  for (const auto& e : placements())
    if (e.name == name) return e.placement;
  std::string known;
  for (const auto& e : placements()) known += (known.empty() ? "" : ", ") + e.name;
  throw Error(cat("unknown placement '", name.substr(0, 64), "' (expected one of ", known, ")"));
}

std::string to_string(Placement p) {
  for (const auto& e : placements())
    if (e.placement == p) return e.name;
  return "?";
}

std::vector<std::string> placement_names() {
  std::vector<std::string> names;
  for (const auto& e : placements()) names.push_back(e.name);
  return names;
}

std::vector<Placement> all_placements() {
  std::vector<Placement> all;
  for (const auto& e : placements()) all.push_back(e.placement);
  return all;
}

std::string placement_help() {
  std::string s;
  for (const auto& e : placements()) s += cat(s.empty() ? "" : "; ", e.name, " ", e.description);
  return s;
}

namespace {
double deepnorm_alpha(int64_t n_layer) { return std::pow(2.0 * static_cast<double>(n_layer), 0.25); }
double deepnorm_beta(int64_t n_layer) { return std::pow(8.0 * static_cast<double>(n_layer), -0.25); }

// Xavier-normal: N(0, gain^2 2 / (fan_in + fan_out)) for the rows [r0, r1) of a (out, in) weight,
// counting those rows as the map's outputs (a slice of the fused qkv is one projection).
template <typename T>
void xavier_rows(Tensor<T>& w, int64_t r0, int64_t r1, double gain, Rng& rng) {
  const int64_t in = w.shape()[1];
  const double std = gain * std::sqrt(2.0 / static_cast<double>(in + (r1 - r0)));
  for (int64_t i = r0 * in; i < r1 * in; ++i) w[i] = static_cast<T>(std * rng.normal());
}
}  // namespace

template <typename T>
double rms(TensorView<const T> v) {
  return v.numel() ? std::sqrt(vmath::sum_squares(v.data(), v.numel()) / static_cast<double>(v.numel())) : 0.0;
}

template <typename T>
DecoderBlock<T>::DecoderBlock(BlockOptions o) : options_(o) {
  const NormSpec norm{.dim = o.dim, .eps = o.norm_eps, .dyt_alpha = o.dyt_alpha, .dyt_beta = o.dyt_beta};
  NormSpec attn_norm = norm;
  if (o.dyt_alpha_attn > 0) attn_norm.dyt_alpha = o.dyt_alpha_attn;
  norm1_ = &this->add_module("norm1", make_norm<T>(o.norm, attn_norm));
  attn_ = &this->add_module("attn", std::make_unique<CausalSelfAttention<T>>(
                                              AttentionOptions{o.dim, o.n_head, o.bias, o.qk_norm, o.norm_eps,
                                                               o.init_std, o.proj_init_std}));
  norm2_ = &this->add_module("norm2", make_norm<T>(o.norm, norm));
  mlp_ = &this->add_module("mlp", std::make_unique<MLP<T>>(
                                             MlpOptions{o.dim, o.mlp_hidden, o.mlp, o.bias, o.init_std, o.proj_init_std}));
  if (o.placement == Placement::kPeri) {
    attn_out_norm_ = &this->add_module("attn_out_norm", make_norm<T>(o.norm, norm));
    mlp_out_norm_ = &this->add_module("mlp_out_norm", make_norm<T>(o.norm, norm));
  }
  check(o.n_layer >= 1, "DecoderBlock: n_layer must be >= 1, got ", o.n_layer);
  if (o.placement == Placement::kDeepNorm) {
    Rng rng = default_rng();
    reset_parameters(rng);
  }
}

template <typename T>
void DecoderBlock<T>::reset_parameters(Rng& rng) {
  Module<T>::reset_parameters(rng);
  if (options_.placement != Placement::kDeepNorm) return;
  const double beta = deepnorm_beta(options_.n_layer);
  const int64_t C = options_.dim;
  Tensor<T>& qkv = this->parameter("attn.qkv.weight").value;  // rows: q, k, v
  xavier_rows(qkv, 0, C, 1.0, rng);
  xavier_rows(qkv, C, 2 * C, 1.0, rng);
  xavier_rows(qkv, 2 * C, 3 * C, beta, rng);
  for (const char* name : {"attn.proj.weight", "mlp.fc.weight", "mlp.proj.weight"}) {
    Tensor<T>& w = this->parameter(name).value;
    xavier_rows(w, 0, w.shape()[0], beta, rng);
  }
}

template <typename T>
Var<T> DecoderBlock<T>::forward(Var<T> x) {
  return forward(x, nullptr);
}

template <typename T>
Var<T> DecoderBlock<T>::forward(Var<T> x, BlockProbe* probe) {
  // The max logit comes back through a local, not the module: blocks may run on several tapes at
  // once (lm/batch_parallel.h), each with its own probe.
  T max_logit = 0;
  const auto attn = [&](Var<T> in) { return attn_->forward(in, &max_logit); };
  const auto record = [&](Var<T> attention_input) {
    if (probe) *probe = {rms<T>(x.value()), rms<T>(attention_input.value()), static_cast<double>(max_logit)};
  };
  switch (options_.placement) {
    case Placement::kPre: {
      Var<T> a_in = norm1_->forward(x);
      Var<T> x1 = add(x, attn(a_in));
      record(a_in);
      return add(x1, mlp_->forward(norm2_->forward(x1)));
    }
    case Placement::kPeri: {
      Var<T> a_in = norm1_->forward(x);
      Var<T> x1 = add(x, attn_out_norm_->forward(attn(a_in)));
      record(a_in);
      return add(x1, mlp_out_norm_->forward(mlp_->forward(norm2_->forward(x1))));
    }
    case Placement::kPost: {
      Var<T> x1 = norm1_->forward(add(x, attn(x)));
      record(x);
      return norm2_->forward(add(x1, mlp_->forward(x1)));
    }
    case Placement::kDeepNorm: {
      const double alpha = deepnorm_alpha(options_.n_layer);
      Var<T> x1 = norm1_->forward(add(scale(x, alpha), attn(x)));
      record(x);
      return norm2_->forward(add(scale(x1, alpha), mlp_->forward(x1)));
    }
  }
  throw Error("DecoderBlock: unknown placement");
}

template <typename T>
std::string DecoderBlock<T>::options_repr() const {
  return cat("placement=", to_string(options_.placement), ", norm=", to_string(options_.norm),
             options_.qk_norm.is_none() ? "" : ", qk_norm=" + to_string(options_.qk_norm));
}

template double rms<float>(TensorView<const float>);
template double rms<double>(TensorView<const double>);
template class DecoderBlock<float>;
template class DecoderBlock<double>;

}  // namespace tapegrad::nn
