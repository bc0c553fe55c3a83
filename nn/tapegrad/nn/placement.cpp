#include "tapegrad/nn/placement.h"

#include <cmath>

#include "tapegrad/error.h"

namespace tapegrad::nn {

namespace {
// DeepNet (Wang et al. 2022), for an N-block decoder: alpha = (2N)^(1/4), beta = (8N)^(-1/4).
double deepnorm_alpha(int64_t layers) { return std::pow(2.0 * static_cast<double>(layers), 0.25); }
double deepnorm_beta(int64_t layers) { return std::pow(8.0 * static_cast<double>(layers), -0.25); }
}  // namespace

Registry<PlacementEntry>& placement_registry() {
  static Registry<PlacementEntry>* const registry = [] {
    auto* r = new Registry<PlacementEntry>("placement");  // never destroyed: handles outlive static destructors
    r->add({.name = "pre", .description = "X + F(Norm(X))", .norm_input = true});
    r->add({.name = "post", .description = "Norm(X + F(X))", .norm_sum = true});
    r->add({.name = "peri",
            .description = "X + Norm(F(Norm(X))): the sub-layer's output normalised too (Peri-LN)",
            .norm_input = true,
            .norm_output = true});
    r->add({.name = "deepnorm",
            .description = "Norm(alpha X + F(X)), alpha = (2N)^(1/4), beta-scaled init (DeepNet)",
            .norm_sum = true,
            .residual_weight = deepnorm_alpha,
            .init_gain = deepnorm_beta});
    return r;
  }();
  return *registry;
}

Placement Placement::parse(std::string_view name) { return Placement(&placement_registry().at(name)); }

std::string to_string(Placement p) { return std::string(p.name()); }

std::vector<std::string> placement_names() { return placement_registry().names(); }

std::vector<Placement> all_placements() {
  std::vector<Placement> all;
  for (const PlacementEntry* e : placement_registry().entries()) all.push_back(Placement::of(*e));
  return all;
}

std::string placement_help() {
  std::string s;
  for (const PlacementEntry* e : placement_registry().entries()) s += cat(s.empty() ? "" : "; ", e->name, " ", e->description);
  return s;
}

Placement register_placement(PlacementEntry entry) {
  check(entry.norm_input || entry.norm_output || entry.norm_sum, "placement '", entry.name.substr(0, 64),
        "' places no norm (set norm_input, norm_output or norm_sum; --norm none gives a model without norms)");
  return Placement::of(placement_registry().add(std::move(entry)));
}

}  // namespace tapegrad::nn
