// Plugins: a shared library of your own that registers norms into a program that loads it at run
// time — how a C++ norm reaches `import tapegrad` (tapegrad.nn.load_plugin(path)) and a run that
// trained with it resumes from Python. Build it against the same installed tapegrad, with the same
// compiler (find_package(tapegrad); target_link_libraries(my_plugin PRIVATE tapegrad::nn)), as a
// SHARED library, and define its entry point once:
//
//   #include "tapegrad/nn/plugin.h"
//   TAPEGRAD_PLUGIN(host) { host.register_norm(tapegrad::nn::norm_entry<MyNorm>("mynorm", "MyNorm", "...")); }
//
// The loader checks the plugin's version and the size of NormEntry against its own before calling
// it: a plugin built against another tapegrad is refused by name, not run.
#pragma once

#include <cstddef>

#include "tapegrad/nn/norm.h"

namespace tapegrad::nn {

inline constexpr int kPluginVersion = 1;

// What the loader hands the plugin's entry point.
struct PluginHost {
  int version = kPluginVersion;
  std::size_t norm_entry_size = sizeof(NormEntry);
  void (*register_norm)(NormEntry entry) = nullptr;  // into the loader's registry
};

}  // namespace tapegrad::nn

// The entry point, and the two numbers the loader compares before calling it.
#define TAPEGRAD_PLUGIN(host)                                                                                  \
  extern "C" __attribute__((visibility("default"))) int tapegrad_plugin_version() {                          \
    return tapegrad::nn::kPluginVersion;                                                                       \
  }                                                                                                            \
  extern "C" __attribute__((visibility("default"))) std::size_t tapegrad_plugin_norm_entry_size() {          \
    return sizeof(tapegrad::nn::NormEntry);                                                                    \
  }                                                                                                            \
  extern "C" __attribute__((visibility("default"))) void tapegrad_register_plugin(tapegrad::nn::PluginHost& host)
