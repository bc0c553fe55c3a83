// tapegrad.nn.load_plugin(path): a shared library of C++ norms (nn/plugin.h) registered into this
// process, so TrainConfig(norm=...) trains them and Trainer.resume continues a run that used one.
// The library stays loaded for the process's life (its norms' code must outlive every model).
#include <dlfcn.h>

#include <filesystem>

#include "bind.h"
#include "tapegrad/io/file.h"
#include "tapegrad/nn/plugin.h"

namespace tapegrad::py {

namespace {

std::vector<std::string> load_plugin(const std::string& path) {
  io::check_path(path, "load_plugin path");
  // dlopen reads what it is given: a FIFO or a device would block it, so only a regular file.
  std::error_code ec;
  check(std::filesystem::is_regular_file(path, ec), "load_plugin: '", path,
        "' is not a regular file (a shared library built with TAPEGRAD_PLUGIN, tapegrad/nn/plugin.h)");
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    throw Error(cat("load_plugin: cannot load '", path, "': ", why ? why : "unknown error"));
  }
  const auto symbol = [&](const char* name) {
    void* s = dlsym(lib, name);
    check(s != nullptr, "load_plugin: '", path, "' has no ", name,
          " (define its entry point with TAPEGRAD_PLUGIN, tapegrad/nn/plugin.h)");
    return s;
  };
  const auto version = reinterpret_cast<int (*)()>(symbol("tapegrad_plugin_version"))();
  const auto entry_size = reinterpret_cast<std::size_t (*)()>(symbol("tapegrad_plugin_norm_entry_size"))();
  check(version == nn::kPluginVersion && entry_size == sizeof(nn::NormEntry), "load_plugin: '", path,
        "' was built against another tapegrad (plugin version ", version, ", NormEntry of ", entry_size,
        " bytes; this one: ", nn::kPluginVersion, ", ", sizeof(nn::NormEntry), "): rebuild it against this installation");
  const auto before = nn::norm_names();
  nn::PluginHost host;
  host.register_norm = [](nn::NormEntry e) { nn::register_norm(std::move(e)); };
  reinterpret_cast<void (*)(nn::PluginHost&)>(symbol("tapegrad_register_plugin"))(host);
  std::vector<std::string> added;
  for (const std::string& n : nn::norm_names())
    if (std::find(before.begin(), before.end(), n) == before.end()) added.push_back(n);
  return added;
}

}  // namespace

void bind_plugin(pyb::module_& nn_module) {
  nn_module.def("load_plugin", &load_plugin, pyb::arg("path"),
                "Loads a shared library of C++ norms (tapegrad/nn/plugin.h) into this process; returns the norms it\n"
                "registered. Trainer.resume of a run that trained with one needs it loaded first.");
}

}  // namespace tapegrad::py
