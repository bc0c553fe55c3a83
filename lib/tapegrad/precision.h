// Mixed precision, as PyTorch's autocast: a scope in which the float GEMMs take bfloat16 operands
// (rounded once, bf16.h) and accumulate in float32, while everything else — the norms unless asked,
// softmax, the loss, the optimizer and the master weights — stays float32.
//
//   { Autocast bf16({.gemm = Precision::kBf16}); model.forward(...); }
//   tape.backward();   // each op runs its backward at the precision it was recorded with
//
// The state is per thread (as torch.autocast) and is read when an op is recorded: an op captures
// it, so its backward's GEMMs (dx = dy W, dW = dy^T x) use the same precision wherever backward
// runs. Double tapes ignore it (gradcheck stays float64).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tapegrad {

enum class Precision : uint8_t { kFp32, kBf16 };

std::string_view precision_name(Precision p);  // "fp32" | "bf16"
// Parses a name; throws naming `what` (a flag, field or argument), the value and the choices.
Precision parse_precision(std::string_view name, std::string_view what);
std::vector<std::string> precision_names();

struct ComputePrecision {
  Precision gemm = Precision::kFp32;   // the operands of every float GEMM (linear, attention, head)
  Precision norms = Precision::kFp32;  // kBf16: a norm's input and output rounded to bf16 (nn/norm.h)
  bool operator==(const ComputePrecision&) const = default;
};

// The calling thread's precision (float32 everywhere outside any Autocast).
ComputePrecision autocast_state();

// Sets the thread's precision for its lifetime, restoring the previous one after.
class Autocast {
 public:
  explicit Autocast(ComputePrecision p);
  ~Autocast();
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

 private:
  ComputePrecision previous_;
};

}  // namespace tapegrad
