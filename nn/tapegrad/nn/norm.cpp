#include "tapegrad/nn/norm.h"

#include "tapegrad/nn/dyt.h"
#include "tapegrad/nn/layernorm.h"
#include "tapegrad/nn/rmsnorm.h"
#include "tapegrad/nn/scalenorm.h"

namespace tapegrad::nn {

namespace {

template <template <typename> class M>
NormEntry norm(std::string_view name, std::string_view label, std::string_view description, bool identity = false) {
  NormEntry e{name, label, description, &M<float>::from_spec, &M<double>::from_spec};
  if constexpr (requires { M<float>::row_kernels(); }) {
    e.rows_float = &M<float>::row_kernels;
    e.rows_double = &M<double>::row_kernels;
  }
  e.identity = identity;
  return e;
}

}  // namespace

// THE REGISTRY: one line per norm. Order is the order of --help, the lab's default list, plots.
const std::vector<NormEntry>& norm_registry() {
  static const std::vector<NormEntry> registry{
      norm<LayerNorm>("layernorm", "LayerNorm", "re-centre and re-scale each row: gamma (x - mean) / std + beta"),
      norm<RMSNorm>("rmsnorm", "RMSNorm", "re-scale each row to unit RMS: w x / rms(x); no re-centring, no bias"),
      norm<ScaleNorm>("scalenorm", "ScaleNorm", "project each row to radius g: g x / max(||x||, eps), one scalar g = sqrt(dim)"),
      norm<DyT>("dyt", "DyT", "squash each element: gamma tanh(alpha x) + beta, one learned scalar alpha (initially 0.5 unless configured); no statistics"),
      norm<Identity>("none", "no norm", "no normalisation (the identity)", /*identity=*/true),
  };
  return registry;
}

std::vector<std::string> norm_names() {
  std::vector<std::string> names;
  for (const NormEntry& e : norm_registry()) names.emplace_back(e.name);
  return names;
}

std::string norm_help() {
  std::string s;
  for (const NormEntry& e : norm_registry()) s += cat(s.empty() ? "" : "\n", e.name, ": ", e.description);
  return s;
}

std::string norm_label(std::string_view name) {
  for (const NormEntry& e : norm_registry())
    if (e.name == name) return std::string(e.label);
  return std::string(name);
}

NormKind NormKind::parse(std::string_view name) {
  for (const NormEntry& e : norm_registry())
    if (e.name == name) return NormKind(&e);
  std::string known;
  for (const NormEntry& e : norm_registry()) known += cat(known.empty() ? "" : ", ", e.name);
  throw Error(cat("unknown norm '", name.substr(0, 64), "'; known: ", known));
}

std::vector<NormKind> all_norms() {
  std::vector<NormKind> kinds;
  for (const NormEntry& e : norm_registry()) kinds.push_back(NormKind::parse(e.name));
  return kinds;
}

std::vector<NormKind> qk_norms(bool with_none) {
  std::vector<NormKind> kinds;
  for (const NormKind k : all_norms())
    if (k.can_be_qk_norm() && (with_none || !k.is_none())) kinds.push_back(k);
  return kinds;
}

std::string to_string(NormKind kind) { return std::string(kind.name()); }

}  // namespace tapegrad::nn
