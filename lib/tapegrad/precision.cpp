#include "tapegrad/precision.h"

#include "tapegrad/error.h"

namespace tapegrad {

namespace {
thread_local ComputePrecision t_state{};
}

std::string_view precision_name(Precision p) { return p == Precision::kBf16 ? "bf16" : "fp32"; }

std::vector<std::string> precision_names() { return {"fp32", "bf16"}; }

Precision parse_precision(std::string_view name, std::string_view what) {
  if (name == "fp32") return Precision::kFp32;
  if (name == "bf16") return Precision::kBf16;
  throw Error(cat(what, " '", name, "': unknown precision; known: fp32, bf16"));
}

ComputePrecision autocast_state() { return t_state; }

Autocast::Autocast(ComputePrecision p) : previous_(t_state) { t_state = p; }
Autocast::~Autocast() { t_state = previous_; }

}  // namespace tapegrad
