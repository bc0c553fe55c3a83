#include "tapegrad/blas_kernels.h"

#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <mutex>

namespace tapegrad {

namespace {

// OpenBLAS's names (gotoblas_corename) of its x86 kernel sets that use no AVX2: what an unknown
// CPU falls back to, and what no CPU with AVX2 should run.
constexpr std::array kPreAvx2Cores = {
    std::string_view("Unknown"),    std::string_view("Katmai"),   std::string_view("Coppermine"),
    std::string_view("Northwood"),  std::string_view("Prescott"), std::string_view("Banias"),
    std::string_view("Atom"),       std::string_view("Core2"),    std::string_view("Penryn"),
    std::string_view("Dunnington"), std::string_view("Nehalem"),  std::string_view("Sandybridge"),
    std::string_view("Athlon"),     std::string_view("Opteron"),  std::string_view("Opteron(SSE3)"),
    std::string_view("Barcelona"),  std::string_view("Bobcat"),   std::string_view("Nano"),
};

std::string current_core() {
  const char* name = openblas_get_corename();
  return name ? std::string(name) : std::string();
}

BlasKernels select_kernels() {
  BlasKernels result;
  result.detected = result.core = current_core();
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return result;
  const auto better = better_blas_core(result.detected, cpu_vector_features());
  if (!better) return result;
  // Looked up at run time: present in DYNAMIC_ARCH builds of OpenBLAS only.
  using Hook = void (*)();
  const auto quit = reinterpret_cast<Hook>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
  const auto init = reinterpret_cast<Hook>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
  if (quit == nullptr || init == nullptr) return result;
  // OpenBLAS reads the variable during init only; it is removed again so that the environment
  // this process hands to its children is the one it was given.
  setenv("OPENBLAS_CORETYPE", better->c_str(), 1);
  quit();
  init();
  unsetenv("OPENBLAS_CORETYPE");
  result.core = current_core();
  result.reselected = true;
  return result;
}

}  // namespace

CpuVectorFeatures cpu_vector_features() {
  CpuVectorFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  // GCC's checks include the OS's XSAVE support for the YMM/ZMM state.
  __builtin_cpu_init();
  f.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  f.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl");
#endif
  return f;
}

std::optional<std::string> better_blas_core(std::string_view chosen, CpuVectorFeatures cpu) {
  if (std::find(kPreAvx2Cores.begin(), kPreAvx2Cores.end(), chosen) == kPreAvx2Cores.end()) {
    return std::nullopt;
  }
  if (cpu.avx512) return "SkylakeX";
  if (cpu.avx2_fma) return "Haswell";
  return std::nullopt;
}

const BlasKernels& configure_blas_kernels() {
  static std::once_flag once;
  static BlasKernels kernels;
  std::call_once(once, [] { kernels = select_kernels(); });
  return kernels;
}

}  // namespace tapegrad
