// The optimizer registry (registry.h): every update rule the training layer can run by name
// (`--optimizer adamw`), with its --help line and a factory from the settings every rule may read.
// The library registers AdamW and SGD; a program registers its own before naming it:
//   optimizer_registry().add({.name = "lion", .description = "...", .make = make_lion});
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tapegrad/optim/optimizer.h"
#include "tapegrad/registry.h"

namespace tapegrad {

// What a factory may read; each rule uses its own (AdamW the betas and eps, SGD the momentum).
struct OptimizerSettings {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double momentum = 0.9;
  WeightDecay weight_decay;
};

struct OptimizerEntry {
  std::string name;
  std::string description;  // one line, for --help
  std::function<std::unique_ptr<Optimizer<float>>(std::vector<Parameter<float>*>, const OptimizerSettings&)> make;
};

Registry<OptimizerEntry>& optimizer_registry();

// The optimizer registered as `name` over `params`; throws "unknown optimizer 'x'; known: ...".
std::unique_ptr<Optimizer<float>> make_optimizer(const std::string& name, std::vector<Parameter<float>*> params,
                                                 const OptimizerSettings& settings);

}  // namespace tapegrad
