// The norm a block uses, chosen at run time: LayerNorm, RMSNorm or none (the identity) — the
// axis the lab compares.
#pragma once

#include <memory>
#include <string>

#include "tapegrad/nn/module.h"

namespace tapegrad::nn {

enum class NormKind { kLayerNorm, kRMSNorm, kNone };
NormKind parse_norm_kind(const std::string& name);  // "layernorm" | "rmsnorm" | "none"; throws otherwise
std::string to_string(NormKind kind);

template <typename T>
class Identity : public UnaryModule<T> {
 public:
  Var<T> forward(Var<T> x) override { return x; }
  std::string type_name() const override { return "Identity"; }
};

// Affine norms (weights initialised to 1); `bias` adds LayerNorm's beta (RMSNorm has none).
template <typename T>
std::unique_ptr<UnaryModule<T>> make_norm(NormKind kind, int64_t dim, double eps, bool bias = true);

}  // namespace tapegrad::nn
