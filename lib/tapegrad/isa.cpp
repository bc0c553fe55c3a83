#include "tapegrad/isa.h"

#include <algorithm>
#include <cstdlib>

#include "tapegrad/error.h"

namespace tapegrad {

namespace {
constexpr std::string_view kNames[kIsaCount] = {"baseline", "avx2", "avx512"};

Isa choose() {
  if (const char* forced = std::getenv("TAPEGRAD_ISA"); forced != nullptr && *forced != '\0') {
    const Isa isa = parse_isa(forced, "TAPEGRAD_ISA");
    runnable_index(isa);
    return isa;
  }
  Isa best = Isa::baseline;
  for (Isa isa : runnable_isas()) best = isa;
  return best;
}

std::string runnable_list() {
  std::string s;
  for (Isa isa : runnable_isas()) s += cat(s.empty() ? "" : ", ", isa_name(isa));
  return s;
}
}  // namespace

std::string_view isa_name(Isa isa) { return kNames[static_cast<int>(isa)]; }

bool isa_compiled(Isa isa) {
#if defined(TAPEGRAD_ISA_VARIANTS)
  (void)isa;
  return true;
#else
  return isa == Isa::baseline;
#endif
}

bool isa_supported(Isa isa) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  switch (isa) {
    case Isa::baseline: return true;
    // The features x86-64-v3 and -v4 add, by names both GCC and Clang know (Clang 14 has no
    // level names, F16C or MOVBE; every CPU with AVX2, FMA and BMI2 has those).
    case Isa::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi") &&
             __builtin_cpu_supports("bmi2");
    case Isa::avx512:
      return isa_supported(Isa::avx2) && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl");
  }
  return false;
#else
  return isa == Isa::baseline;
#endif
}

std::vector<Isa> runnable_isas() {
  std::vector<Isa> out;
  for (int i = 0; i < kIsaCount; ++i)
    if (isa_compiled(Isa(i)) && isa_supported(Isa(i))) out.push_back(Isa(i));
  return out;
}

Isa parse_isa(std::string_view name, std::string_view what) {
  for (int i = 0; i < kIsaCount; ++i)
    if (name == kNames[i]) return Isa(i);
  throw Error(cat(what, " '", name, "': unknown kernel variant; known: baseline, avx2, avx512 (this CPU runs: ",
                  runnable_list(), ")"));
}

// Called on every kernel dispatch: the answers are computed once, and nothing is built unless it fails.
int runnable_index(Isa isa) {
  static const std::vector<Isa> runnable = runnable_isas();
  const int i = static_cast<int>(isa);
  if (std::find(runnable.begin(), runnable.end(), isa) != runnable.end()) [[likely]]
    return i;
  check(isa_compiled(isa), "kernel variant ", isa_name(isa), " is not in this build (x86-64 builds hold avx2 and avx512)");
  throw Error(cat("kernel variant ", isa_name(isa), " needs an instruction set this CPU lacks; it runs: ", runnable_list()));
}

Isa active_isa() {
  static const Isa isa = choose();
  return isa;
}

}  // namespace tapegrad
