#include "tapegrad/nn/block.h"

#include <cmath>

#include "tapegrad/ops/add.h"
#include "tapegrad/vmath.h"

namespace tapegrad::nn {

// A block composes tape nodes (norm, attention, add, norm, MLP, add); each has its own backward,
// and the residual adds route the gradient around the sub-layers unchanged (d(X + F(X))/dX = I + F').

Placement parse_placement(const std::string& name) {
  if (name == "pre") return Placement::kPre;
  if (name == "post") return Placement::kPost;
  throw Error(cat("unknown placement '", name, "' (expected pre or post)"));
}

std::string to_string(Placement p) { return p == Placement::kPre ? "pre" : "post"; }

template <typename T>
double rms(TensorView<const T> v) {
  return v.numel() ? std::sqrt(vmath::sum_squares(v.data(), v.numel()) / static_cast<double>(v.numel())) : 0.0;
}

template <typename T>
DecoderBlock<T>::DecoderBlock(BlockOptions o) : options_(o) {
  const NormSpec norm{o.dim, o.norm_eps};
  norm1_ = &this->add_module("norm1", make_norm<T>(o.norm, norm));
  attn_ = &this->add_module("attn", std::make_unique<CausalSelfAttention<T>>(
                                              AttentionOptions{o.dim, o.n_head, o.bias, o.qk_norm, o.norm_eps,
                                                               o.init_std, o.proj_init_std}));
  norm2_ = &this->add_module("norm2", make_norm<T>(o.norm, norm));
  mlp_ = &this->add_module("mlp", std::make_unique<MLP<T>>(
                                             MlpOptions{o.dim, o.mlp_hidden, o.mlp, o.bias, o.init_std, o.proj_init_std}));
}

template <typename T>
Var<T> DecoderBlock<T>::forward(Var<T> x) {
  return forward(x, nullptr);
}

template <typename T>
Var<T> DecoderBlock<T>::forward(Var<T> x, BlockProbe* probe) {
  if (options_.placement == Placement::kPre) {
    Var<T> a_in = norm1_->forward(x);
    Var<T> x1 = add(x, attn_->forward(a_in));
    if (probe) *probe = {rms<T>(x.value()), rms<T>(a_in.value()), static_cast<double>(attn_->last_max_logit())};
    return add(x1, mlp_->forward(norm2_->forward(x1)));
  }
  Var<T> x1 = norm1_->forward(add(x, attn_->forward(x)));
  if (probe) *probe = {rms<T>(x.value()), rms<T>(x.value()), static_cast<double>(attn_->last_max_logit())};
  return norm2_->forward(add(x1, mlp_->forward(x1)));
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
