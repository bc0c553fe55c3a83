// The training flags of train_lm (and of compare_norms, minus its sweep axes): every TrainConfig
// field as a CLI11 option, with --help text, choices and defaults from the config and the norm
// registry, and --config FILE for JSON configs.
#pragma once

#include <set>
#include <string>

#include "tapegrad/lm/train_config.h"

namespace CLI {
class App;
class Option;
}

namespace tapegrad::cli {

// Registers every field as a flag on `app` (bound to `c`, defaults = c's values), and --config
// FILE (JSON, same keys; flags on the command line win). Flags named in `skip` ("norm", "lr",
// ...) are left out, for programs that define them differently (the lab's sweep axes).
void add_train_flags(CLI::App& app, lm::TrainConfig& c, const std::set<std::string>& skip = {});

// The settings given on the command line or in --config (flag names without the dashes).
std::set<std::string> given_settings(const CLI::App& app);

// A --flag taking a registered norm's name: choices, --help text (`help`, then each norm's line)
// and the default from the registry.
CLI::Option* add_norm_option(CLI::App& app, const std::string& flag, nn::NormKind& value, const std::string& help);

}  // namespace tapegrad::cli
