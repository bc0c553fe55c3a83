#include "tapegrad/precision.h"

#include "tapegrad/error.h"

namespace tapegrad {

namespace {
thread_local ComputePrecision t_state{};
}

// The names, in enum order: the one list name, parse and the choices derive from.
std::vector<std::string> precision_names() { return {"fp32", "bf16"}; }

std::string_view precision_name(Precision p) {
  static const std::vector<std::string> names = precision_names();
  return names[static_cast<size_t>(p)];
}

Precision parse_precision(std::string_view name, std::string_view what) {
  const std::vector<std::string> names = precision_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<Precision>(i);
  throw Error(cat(what, " '", name, "': unknown precision; known: ", names[0], ", ", names[1]));
}

ComputePrecision autocast_state() { return t_state; }

Autocast::Autocast(ComputePrecision p) : previous_(t_state) { t_state = p; }
Autocast::~Autocast() { t_state = previous_; }

}  // namespace tapegrad
