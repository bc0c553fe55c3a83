// The placement registry: where a block's norms sit around each sub-layer F (attention, then the
// MLP) and how F's output joins the residual stream X. Every placement is one formula,
//   Y = Sum(alpha X + Out(F(In(X))))
// with In, Out and Sum each either the identity or a norm, and alpha a residual weight:
//   pre       In = Norm                       X + F(Norm(X))            GPT-2, LLaMA (the default)
//   post      Sum = Norm                      Norm(X + F(X))            the original Transformer
//   peri      In = Norm, Out = Norm           X + Norm(F(Norm(X)))      Peri-LN, Gemma 2's sandwich
//   deepnorm  Sum = Norm, alpha = (2N)^(1/4)  Norm(alpha X + F(X))      DeepNet, with its init
// so a placement is declared as data (which of the three norms it has, alpha, an init gain) and
// the block (block.h) runs any of them. The registry is open (registry.h): a program registers its
// own before naming it —
//   nn::register_placement({.name = "sum-and-in", .description = "...", .norm_input = true, .norm_sum = true});
// after which `--placement sum-and-in`, the lab and checkpoints know it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tapegrad/registry.h"

namespace tapegrad::nn {

struct PlacementEntry {
  std::string name;         // as typed on the command line and stored in checkpoints
  std::string description;  // one line, for --help
  bool norm_input = false;  // In: the sub-layer reads Norm(X)
  bool norm_output = false; // Out: its output is normalised before it joins the stream
  bool norm_sum = false;    // Sum: the stream is normalised after the residual add
  // alpha for a model of layers blocks (null: 1).
  double (*residual_weight)(int64_t layers) = nullptr;
  // A Xavier-normal init with this gain for the value rows of the attention's qkv, its output
  // projection and every matrix of the MLP, the query and key rows with gain 1 (DeepNet's beta);
  // null: the modules' own init.
  double (*init_gain)(int64_t layers) = nullptr;
};

Registry<PlacementEntry>& placement_registry();

// A registered placement, by handle: cheap to copy and compare.
class Placement {
 public:
  Placement() : Placement(parse("pre")) {}
  // Throws "unknown placement 'x'; known: pre, post, peri, deepnorm" for a name the registry lacks.
  static Placement parse(std::string_view name);
  static Placement of(const PlacementEntry& registered) { return Placement(&registered); }

  const PlacementEntry& entry() const { return *entry_; }
  std::string_view name() const { return entry_->name; }
  bool operator==(const Placement& o) const { return entry_ == o.entry_; }

 private:
  explicit Placement(const PlacementEntry* entry) : entry_(entry) {}
  const PlacementEntry* entry_;
};

std::string to_string(Placement placement);
std::vector<std::string> placement_names();  // in registration order
std::vector<Placement> all_placements();
std::string placement_help();  // "pre X + F(Norm(X)); post ...", for --help and errors

// Registers a placement; throws if the name is taken or malformed, or if it has no norm at all.
Placement register_placement(PlacementEntry entry);

}  // namespace tapegrad::nn
