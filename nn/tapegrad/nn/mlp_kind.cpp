#include "tapegrad/nn/mlp_kind.h"

#include "tapegrad/error.h"
#include "tapegrad/nn/mlp.h"

namespace tapegrad::nn {

namespace {
template <typename T, MlpActivation A>
std::unique_ptr<UnaryModule<T>> make_fused(const MlpSpec& s) {
  return std::make_unique<MLP<T>>(MlpOptions{s.dim, s.hidden, A, s.bias, s.init_std, s.proj_init_std});
}
template <MlpActivation A>
int64_t fused_hidden(int64_t dim) {
  return default_mlp_hidden(dim, A);
}
template <MlpActivation A>
MlpEntry fused_entry(std::string name, std::string description, int input_maps) {
  return {std::move(name),  std::move(description), &make_fused<float, A>, &make_fused<double, A>,
          &fused_hidden<A>, input_maps};
}
}  // namespace

Registry<MlpEntry>& mlp_registry() {
  static Registry<MlpEntry>* const registry = [] {
    auto* r = new Registry<MlpEntry>("mlp");  // never destroyed: handles outlive static destructors
    r->add(fused_entry<MlpActivation::kGelu>("gelu", "W2 gelu(W1 x), hidden 4 dim (GPT-2)", 1));
    r->add(fused_entry<MlpActivation::kSwiGLU>(
        "swiglu", "W2 (silu(Wg x) * (Wu x)), hidden 8/3 dim rounded up to 8 (Shazeer 2020; LLaMA)", 2));
    return r;
  }();
  return *registry;
}

MlpKind MlpKind::parse(std::string_view name) { return MlpKind(&mlp_registry().at(name)); }

std::string to_string(MlpKind kind) { return std::string(kind.name()); }

std::vector<std::string> mlp_kind_names() { return mlp_registry().names(); }

std::string mlp_kind_help() {
  std::string s;
  for (const MlpEntry* e : mlp_registry().entries()) s += cat(s.empty() ? "" : "; ", e->name, ": ", e->description);
  return s;
}

MlpKind register_mlp(MlpEntry entry) {
  check(entry.make_float && entry.make_double && entry.default_hidden, "mlp '", entry.name.substr(0, 64),
        "': make_float, make_double and default_hidden are all needed");
  check(entry.input_maps >= 1, "mlp '", entry.name.substr(0, 64), "': input_maps must be >= 1, got ", entry.input_maps);
  return MlpKind::of(mlp_registry().add(std::move(entry)));
}

}  // namespace tapegrad::nn
