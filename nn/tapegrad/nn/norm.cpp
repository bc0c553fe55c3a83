#include "tapegrad/nn/norm.h"

#include "tapegrad/nn/dyt.h"
#include "tapegrad/ops/to_bf16.h"
#include "tapegrad/nn/layernorm.h"
#include "tapegrad/nn/rmsnorm.h"
#include "tapegrad/nn/scalenorm.h"

namespace tapegrad::nn {

// THE BUILT-IN NORMS: one line each. Order is the order of --help, the lab's default list, plots;
// norms a program registers come after them.
Registry<NormEntry>& norm_registry() {
  static Registry<NormEntry>* const registry = [] {
    auto* r = new Registry<NormEntry>("norm");  // never destroyed: handles outlive static destructors
    r->add(norm_entry<LayerNorm>("layernorm", "LayerNorm", "re-centre and re-scale each row: gamma (x - mean) / std + beta"));
    r->add(norm_entry<RMSNorm>("rmsnorm", "RMSNorm", "re-scale each row to unit RMS: w x / rms(x); no re-centring, no bias"));
    r->add(norm_entry<ScaleNorm>("scalenorm", "ScaleNorm", "project each row to radius g: g x / max(||x||, eps), one scalar g = sqrt(dim)"));
    r->add(norm_entry<DyT>("dyt", "DyT", "squash each element: gamma tanh(alpha x) + beta, one learned scalar alpha (initially 0.5 unless configured); no statistics"));
    r->add(norm_entry<Identity>("none", "no norm", "no normalisation (the identity)", /*identity=*/true));
    return r;
  }();
  return *registry;
}

std::vector<std::string> norm_names() { return norm_registry().names(); }

std::string norm_help() { return norm_registry().help(); }

std::string norm_label(std::string_view name) {
  const NormEntry* e = norm_registry().find(name);
  return e ? e->label : std::string(name);
}

NormKind NormKind::parse(std::string_view name) { return NormKind(&norm_registry().at(name)); }

std::vector<NormKind> all_norms() {
  std::vector<NormKind> kinds;
  for (const NormEntry* e : norm_registry().entries()) kinds.push_back(NormKind::of(*e));
  return kinds;
}

std::vector<NormKind> qk_norms(bool with_none) {
  std::vector<NormKind> kinds;
  for (const NormKind k : all_norms())
    if (k.can_be_qk_norm() && (with_none || !k.is_none())) kinds.push_back(k);
  return kinds;
}

std::string qk_norm_names() {
  std::string names;
  for (const NormKind k : qk_norms()) names += (names.empty() ? "" : ", ") + std::string(k.name());
  return names;
}

std::string to_string(NormKind kind) { return std::string(kind.name()); }

template <typename T>
Var<T> apply_norm(UnaryModule<T>& norm, Var<T> x) {
  // The identity ("none") computes nothing, so nothing is rounded: the residual stream stays float32.
  if (autocast_state().norms != Precision::kBf16 || dynamic_cast<Identity<T>*>(&norm) != nullptr) return norm(x);
  return to_bf16(norm(to_bf16(x)));
}

template Var<float> apply_norm(UnaryModule<float>&, Var<float>);
template Var<double> apply_norm(UnaryModule<double>&, Var<double>);

}  // namespace tapegrad::nn
