// State dicts: a model's or an optimizer's tensors by name (torch's state_dict), and their
// safetensors files.
//
//   io::save_state_dict("model.safetensors", model.state_dict());
//   io::load_state_dict("model.safetensors", model.state_dict());            // strict
//   auto report = io::load_state_dict(path, model.state_dict(), {.strict = false});
//
// A StateDict holds pointers: loading writes into the tensors it names (the model's own
// parameters, the optimizer's moments). Loading checks the whole file before it changes anything:
// every missing, unexpected (strict) or mis-shaped key is reported at once, names listed.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tapegrad/tensor.h"

namespace tapegrad {

template <typename T>
class Optimizer;

template <typename T>
using StateDict = std::vector<std::pair<std::string, Tensor<T>*>>;

struct LoadOptions {
  // Missing and unexpected keys are errors (true), or reported and skipped (false). A key present
  // on both sides with another shape or dtype is always an error.
  bool strict = true;
};

struct LoadReport {
  std::vector<std::string> missing;     // in the target, not in the source (left unchanged)
  std::vector<std::string> unexpected;  // in the source, not in the target (ignored)
};

// Copies `source` into `target` by name. `what` names the source in errors (a path, say).
// Every load takes where the tensors come from first and the state dict they go into second,
// as io::load_state_dict(path, target) does.
template <typename T>
LoadReport load_state_dict(const std::map<std::string, Tensor<T>>& source, const StateDict<T>& target,
                           const LoadOptions& options = {}, const std::string& what = "state dict");

namespace io {

// Written atomically (file.h); metadata goes to the safetensors header.
template <typename T>
void save_state_dict(const std::string& path, const StateDict<T>& state,
                     const std::map<std::string, std::string>& metadata = {});
// Reads a safetensors file (F32 for float, F64 for double) into `target`.
template <typename T>
LoadReport load_state_dict(const std::string& path, const StateDict<T>& target, const LoadOptions& options = {});

// An optimizer's state dict and its step count (kept in the header's metadata as "step"). The
// optimizer must hold the same parameters, in the same order and shapes, as the one saved.
template <typename T>
void save_optimizer(const std::string& path, Optimizer<T>& optimizer);
template <typename T>
void load_optimizer(const std::string& path, Optimizer<T>& optimizer);

}  // namespace io

}  // namespace tapegrad
