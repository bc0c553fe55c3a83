// Embedding: a (num, dim) table of learned vectors, looked up by integer id (torch.nn.Embedding).
#pragma once

#include <span>

#include "tapegrad/nn/module.h"

namespace tapegrad::nn {

struct EmbeddingOptions {
  int64_t num = 0;  // rows: vocabulary size, or context length for positions
  int64_t dim = 0;
  double init_std = 1.0;  // weight ~ N(0, init_std^2); 1 is torch.nn.Embedding's default
};

template <typename T = float>
class Embedding : public Module<T> {
 public:
  // Initialised at construction from the default generator (init.h).
  explicit Embedding(EmbeddingOptions options);
  void reset_parameters(Rng& rng) override;
  // ids of shape `ids_shape` -> ids_shape + (dim). The ids must outlive backward().
  Var<T> forward(Tape<T>& tape, std::span<const int32_t> ids, Shape ids_shape);
  template <typename U = T>  // refused: a temporary vector of ids dies before backward() reads it
  Var<T> forward(Tape<T>&, std::vector<int32_t>&&, Shape) {
    static_assert(kept_view_of_temporary<U>,
                  "Embedding::forward keeps a view of the ids until backward(): keep them in a variable");
  }
  Parameter<T>& weight() { return *weight_; }
  const EmbeddingOptions& options() const { return options_; }
  std::string type_name() const override { return "Embedding"; }
  std::string options_repr() const override;

 private:
  EmbeddingOptions options_;
  Parameter<T>* weight_;
};

}  // namespace tapegrad::nn
