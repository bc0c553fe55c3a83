#include "tapegrad/nn/block.h"

#include <cmath>
#include <type_traits>

#include "tapegrad/nn/init.h"
#include "tapegrad/ops/add.h"
#include "tapegrad/ops/scale.h"
#include "tapegrad/vector_sums.h"
#include "tapegrad/vmath.h"

namespace tapegrad::nn {

// A block composes tape nodes (norm, attention, add, norm, MLP, add); each has its own backward,
// and the residual adds route the gradient around the sub-layers unchanged (d(X + F(X))/dX = I + F').

namespace {
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
  if (v.numel() == 0) return 0.0;
  double sq = 0;
  if constexpr (std::is_same_v<T, float>) sq = vector_sums().sum_squares(v.data(), v.numel());  // at the CPU's width
  else sq = vmath::sum_squares(v.data(), v.numel());
  return std::sqrt(sq / static_cast<double>(v.numel()));
}

template <typename T>
DecoderBlock<T>::DecoderBlock(BlockOptions o) : options_(o) {
  const NormSpec norm{.dim = o.dim, .eps = o.norm_eps, .dyt_alpha = o.dyt_alpha, .dyt_beta = o.dyt_beta};
  NormSpec attn_norm = norm;
  if (o.dyt_alpha_attn > 0) attn_norm.dyt_alpha = o.dyt_alpha_attn;
  norm1_ = &this->add_module("norm1", make_norm<T>(o.norm, attn_norm));
  attn_ = &this->add_module("attn", std::make_unique<CausalSelfAttention<T>>(AttentionOptions{
                                          .dim = o.dim,
                                          .heads = o.heads,
                                          .bias = o.bias,
                                          .qk_norm = o.qk_norm,
                                          .qk_norm_eps = o.norm_eps,
                                          .init_std = o.init_std,
                                          .proj_init_std = o.proj_init_std}));
  norm2_ = &this->add_module("norm2", make_norm<T>(o.norm, norm));
  mlp_ = &this->add_module("mlp", make_mlp<T>(o.mlp, {.dim = o.dim,
                                                      .hidden = o.mlp_hidden,
                                                      .bias = o.bias,
                                                      .init_std = o.init_std,
                                                      .proj_init_std = o.proj_init_std}));
  const PlacementEntry& p = o.placement.entry();
  if (p.norm_output) {
    attn_out_norm_ = &this->add_module("attn_out_norm", make_norm<T>(o.norm, norm));
    mlp_out_norm_ = &this->add_module("mlp_out_norm", make_norm<T>(o.norm, norm));
  }
  if (p.norm_input && p.norm_sum) {
    attn_sum_norm_ = &this->add_module("attn_sum_norm", make_norm<T>(o.norm, norm));
    mlp_sum_norm_ = &this->add_module("mlp_sum_norm", make_norm<T>(o.norm, norm));
  }
  check(o.layers >= 1, "DecoderBlock: layers must be >= 1, got ", o.layers);
  if (p.init_gain) {
    Rng rng = default_rng();
    reset_parameters(rng);
  }
}

template <typename T>
void DecoderBlock<T>::reset_parameters(Rng& rng) {
  Module<T>::reset_parameters(rng);
  const PlacementEntry& p = options_.placement.entry();
  if (!p.init_gain) return;
  const double beta = p.init_gain(options_.layers);
  const int64_t C = options_.dim;
  Tensor<T>& qkv = this->parameter("attn.qkv.weight").value();  // rows: q, k, v
  xavier_rows(qkv, 0, C, 1.0, rng);
  xavier_rows(qkv, C, 2 * C, 1.0, rng);
  xavier_rows(qkv, 2 * C, 3 * C, beta, rng);
  std::vector<Tensor<T>*> scaled{&this->parameter("attn.proj.weight").value()};
  for (Parameter<T>* w : mlp_->parameters())  // every matrix of the MLP, in its order (fc, proj)
    if (w->value().shape().rank() == 2) scaled.push_back(&w->value());
  for (Tensor<T>* w : scaled) xavier_rows(*w, 0, w->shape()[0], beta, rng);
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
  const auto attn = [&](Var<T> in) { return attn_->with_hooks(in, attn_->forward(in, &max_logit)); };
  const auto record = [&](Var<T> attention_input) {
    if (probe) *probe = {rms<T>(x.value()), rms<T>(attention_input.value()), static_cast<double>(max_logit)};
  };
  // Y = Sum(alpha X + Out(F(In(X)))) (placement.h). `read` receives In(X), what F read.
  const PlacementEntry& p = options_.placement.entry();
  const double alpha = p.residual_weight ? p.residual_weight(options_.layers) : 1.0;
  const auto join = [&](Var<T> in, UnaryModule<T>* norm, UnaryModule<T>* out_norm, UnaryModule<T>* sum_norm,
                        const auto& f, Var<T>* read) {
    Var<T> f_in = p.norm_input ? apply_norm(*norm, in) : in;
    Var<T> y = f(f_in);
    if (p.norm_output) y = apply_norm(*out_norm, y);
    Var<T> sum = add(alpha == 1.0 ? in : scale(in, alpha), y);
    if (read) *read = f_in;
    if (!p.norm_sum) return sum;
    return apply_norm(*(p.norm_input ? sum_norm : norm), sum);
  };
  Var<T> attention_input;
  Var<T> x1 = join(x, norm1_, attn_out_norm_, attn_sum_norm_, attn, &attention_input);
  record(attention_input);
  return join(x1, norm2_, mlp_out_norm_, mlp_sum_norm_, [&](Var<T> in) { return (*mlp_)(in); }, nullptr);
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
