#include "tapegrad/nn/norm.h"

#include "tapegrad/nn/layernorm.h"
#include "tapegrad/nn/rmsnorm.h"

namespace tapegrad::nn {

NormKind parse_norm_kind(const std::string& name) {
  if (name == "layernorm") return NormKind::kLayerNorm;
  if (name == "rmsnorm") return NormKind::kRMSNorm;
  if (name == "none") return NormKind::kNone;
  throw Error(cat("unknown norm '", name, "' (expected layernorm, rmsnorm or none)"));
}

std::string to_string(NormKind kind) {
  switch (kind) {
    case NormKind::kLayerNorm: return "layernorm";
    case NormKind::kRMSNorm: return "rmsnorm";
    case NormKind::kNone: return "none";
  }
  return "?";
}

template <typename T>
std::unique_ptr<UnaryModule<T>> make_norm(NormKind kind, int64_t dim, double eps, bool bias) {
  switch (kind) {
    case NormKind::kLayerNorm: return std::make_unique<LayerNorm<T>>(LayerNormOptions{dim, eps, true, bias});
    case NormKind::kRMSNorm: return std::make_unique<RMSNorm<T>>(RMSNormOptions{dim, eps, true});
    case NormKind::kNone: return std::make_unique<Identity<T>>();
  }
  return nullptr;
}

template std::unique_ptr<UnaryModule<float>> make_norm<float>(NormKind, int64_t, double, bool);
template std::unique_ptr<UnaryModule<double>> make_norm<double>(NormKind, int64_t, double, bool);

}  // namespace tapegrad::nn
