#include "tapegrad/nn/embedding.h"

#include "tapegrad/nn/init.h"
#include "tapegrad/ops/embedding.h"

namespace tapegrad::nn {

// The gather and its scatter-add backward are the primitive op tapegrad::embedding.

template <typename T>
Embedding<T>::Embedding(EmbeddingOptions o) : options_(o) {
  check(o.num > 0 && o.dim > 0, "Embedding: num and dim must be positive, got num=", o.num, " dim=", o.dim);
  weight_ = &this->add_parameter("weight", Tensor<T>(Shape{o.num, o.dim}));
  Rng rng = default_rng();
  reset_parameters(rng);
}

template <typename T>
void Embedding<T>::reset_parameters(Rng& rng) {
  init::normal(weight_->value(), rng, options_.init_std);
}

template <typename T>
Var<T> Embedding<T>::forward(Tape<T>& tape, std::span<const int32_t> ids, Shape ids_shape) {
  return embedding(tape.param(*weight_), ids, ids_shape);
}

template <typename T>
std::string Embedding<T>::options_repr() const {
  return cat(options_.num, ", ", options_.dim);
}

template class Embedding<float>;
template class Embedding<double>;

}  // namespace tapegrad::nn
