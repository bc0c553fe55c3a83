// The MLP registry: every feed-forward sub-layer a block can use (`--mlp gelu`), with its --help
// line, a factory for each precision, its default width and its shape for FLOP counts. The library
// registers the fused MLP (mlp.h) in its two activations; a program registers its own module —
//   nn::register_mlp({.name = "relu2", .description = "W2 relu(W1 x)^2", .make_float = ..., ...});
// after which `--mlp relu2`, the lab and checkpoints know it. Handles (MlpKind) stay valid as
// entries are added (registry.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tapegrad/nn/module.h"
#include "tapegrad/registry.h"

namespace tapegrad::nn {

// What every MLP is built from.
struct MlpSpec {
  int64_t dim = 0;
  int64_t hidden = 0;  // 0: the entry's default_hidden(dim)
  bool bias = true;
  // The init of its input maps and of its output projection, as LinearOptions::init_std (0: torch's
  // default); GPT-2 scales the residual projection: proj_init_std = init_std / sqrt(2 layers).
  double init_std = 0, proj_init_std = 0;
};

template <typename T>
using MlpFactory = std::unique_ptr<UnaryModule<T>> (*)(const MlpSpec&);

struct MlpEntry {
  std::string name;         // as typed on the command line and stored in checkpoints
  std::string description;  // one line, for --help
  MlpFactory<float> make_float = nullptr;
  MlpFactory<double> make_double = nullptr;
  int64_t (*default_hidden)(int64_t dim) = nullptr;  // the hidden width when none is given
  // Maps from the C inputs to H hidden units before the output projection (1: W2 f(W1 x); 2 for
  // a gated form, W2 (f(Wg x) * (Wu x))): the MLP's FLOPs per token are 2 (input_maps + 1) C H.
  int input_maps = 1;

  template <typename T>
  std::unique_ptr<UnaryModule<T>> make(const MlpSpec& spec) const {
    if constexpr (std::is_same_v<T, float>) return make_float(spec);
    else return make_double(spec);
  }
};

Registry<MlpEntry>& mlp_registry();

// A registered MLP, by handle: cheap to copy and compare.
class MlpKind {
 public:
  MlpKind() : MlpKind(parse("gelu")) {}
  // Throws "unknown mlp 'x'; known: gelu, swiglu" for a name the registry lacks.
  static MlpKind parse(std::string_view name);
  static MlpKind of(const MlpEntry& registered) { return MlpKind(&registered); }

  const MlpEntry& entry() const { return *entry_; }
  std::string_view name() const { return entry_->name; }
  // The hidden width a model of this MLP at `dim` uses when none is configured.
  int64_t default_hidden(int64_t dim) const { return entry_->default_hidden(dim); }
  bool operator==(const MlpKind& o) const { return entry_ == o.entry_; }

 private:
  explicit MlpKind(const MlpEntry* entry) : entry_(entry) {}
  const MlpEntry* entry_;
};

std::string to_string(MlpKind kind);
std::vector<std::string> mlp_kind_names();  // in registration order
std::string mlp_kind_help();                // "gelu: ...; swiglu: ..."

// Registers an MLP; throws if the name is taken or malformed, or a factory is missing.
MlpKind register_mlp(MlpEntry entry);

template <typename T>
std::unique_ptr<UnaryModule<T>> make_mlp(MlpKind kind, const MlpSpec& spec) {
  MlpSpec s = spec;
  if (s.hidden == 0) s.hidden = kind.default_hidden(s.dim);
  return kind.entry().make<T>(s);
}

}  // namespace tapegrad::nn
