#include "tapegrad/optim/registry.h"

#include "tapegrad/optim/adamw.h"
#include "tapegrad/optim/sgd.h"

namespace tapegrad {

std::vector<std::string> weight_decay_mode_names() { return {"lr-scaled", "independent"}; }

std::string to_string(WeightDecayMode mode) { return weight_decay_mode_names()[static_cast<size_t>(mode)]; }

WeightDecayMode parse_weight_decay_mode(const std::string& name) {
  const std::vector<std::string> names = weight_decay_mode_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<WeightDecayMode>(i);
  if (name == "coupled") return WeightDecayMode::kLrScaled;  // the former name
  throw Error(cat("unknown weight decay mode '", name.substr(0, 64), "'; known: lr-scaled, independent"));
}

// THE BUILT-IN OPTIMIZERS: one entry each; order is --help's.
Registry<OptimizerEntry>& optimizer_registry() {
  static Registry<OptimizerEntry>* const registry = [] {
    auto* r = new Registry<OptimizerEntry>("optimizer");  // never destroyed: entries outlive static destructors
    r->add({.name = "adamw",
            .description = "Adam with decoupled weight decay (Loshchilov & Hutter 2019), as torch.optim.AdamW",
            .make = [](std::vector<Parameter<float>*> params, const OptimizerSettings& s) -> std::unique_ptr<Optimizer<float>> {
              return std::make_unique<AdamW<float>>(
                  std::move(params), AdamWOptions{.beta1 = s.beta1, .beta2 = s.beta2, .eps = s.eps,
                                                  .weight_decay = s.weight_decay.rate,
                                                  .decay_mode = s.weight_decay.mode, .peak_lr = s.weight_decay.peak_lr});
            }});
    r->add({.name = "sgd",
            .description = "SGD with heavy-ball momentum (--momentum), as torch.optim.SGD",
            .make = [](std::vector<Parameter<float>*> params, const OptimizerSettings& s) -> std::unique_ptr<Optimizer<float>> {
              return std::make_unique<SGD<float>>(
                  std::move(params), SGDOptions{.momentum = s.momentum, .weight_decay = s.weight_decay.rate,
                                                .decay_mode = s.weight_decay.mode, .peak_lr = s.weight_decay.peak_lr});
            }});
    return r;
  }();
  return *registry;
}

std::unique_ptr<Optimizer<float>> make_optimizer(const std::string& name, std::vector<Parameter<float>*> params,
                                                 const OptimizerSettings& settings) {
  return optimizer_registry().at(name).make(std::move(params), settings);
}

}  // namespace tapegrad
