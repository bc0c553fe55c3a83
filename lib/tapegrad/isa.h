// Kernels for the CPU this runs on, chosen at run time.
//
// The library is compiled for the x86-64 baseline (SSE2) unless TAPEGRAD_NATIVE asks for the
// build machine's CPU, so the installed package runs anywhere. Its hot kernels — the attention
// head products, the causal softmax, the norms' rows, GELU and SwiGLU, the cross-entropy's rows,
// AdamW's update and the long sums (vector_sums.h) — are compiled once more
// per instruction set (cmake/TapegradIsa.cmake: "avx2" is x86-64-v3, AVX2 + FMA; "avx512" is
// x86-64-v4 with 512-bit vectors), each copy in its own namespace (isa_baseline, isa_avx2,
// isa_avx512; isa_kernel.h), and a family's table of function pointers is picked once per
// process: the widest variant the CPU supports, or the one TAPEGRAD_ISA names (for tests and A/B).
// This is how llama.cpp's CPU backend and oneDNN ship one binary for many CPUs.
//
// Determinism holds per (variant, thread count): every variant sums in an order fixed by the
// sizes alone, but with FMA a multiply-add rounds once where the baseline rounds twice (GCC
// contracts a * b + c where the ISA has FMA), and packet widths differ (the causal softmax's
// sums, Eigen's exp/tanh), so two variants agree to float round-off, not bitwise
// (tests/nn/test_isa_kernels.cpp holds each to float64).
#pragma once

#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace tapegrad {

enum class Isa { baseline = 0, avx2 = 1, avx512 = 2 };
inline constexpr int kIsaCount = 3;

std::string_view isa_name(Isa isa);
// Whether this build holds the variant (avx2 and avx512 exist on x86-64 builds only).
bool isa_compiled(Isa isa);
// Whether this CPU (and its OS) can run the variant.
bool isa_supported(Isa isa);
// The variants this process can run, baseline first.
std::vector<Isa> runnable_isas();
// The variant the kernels use: TAPEGRAD_ISA if set (baseline, avx2, avx512 — an error naming the
// variable, its value and what this CPU can run otherwise), else the widest runnable one.
// Decided on the first call and fixed for the life of the process.
Isa active_isa();
// Parses an ISA name; throws naming `what` (a flag or variable), the value and the choices.
Isa parse_isa(std::string_view name, std::string_view what);
// Throws unless `isa` is compiled and runnable here; returns its index into a table array.
int runnable_index(Isa isa);

// A kernel family's function table for float and double: Fns<T> holds the function pointers.
template <template <typename> class Fns>
struct ByPrecision {
  Fns<float> f32;
  Fns<double> f64;
  template <typename T>
  const Fns<T>& get() const {
    if constexpr (std::is_same_v<T, float>) return f32;
    else return f64;
  }
};

}  // namespace tapegrad

// Declares the table `name##_table` of type `Type` in every ISA namespace this build compiles (a
// kernel file defines it there, isa_kernel.h), and defines `const Type& name(Isa isa)` returning
// the one for `isa`. Used once per kernel family, in the translation unit that dispatches it.
#if defined(TAPEGRAD_ISA_VARIANTS)
#define TAPEGRAD_ISA_DISPATCH(Type, name)                                                       \
  namespace isa_baseline { extern const Type name##_table; }                                 \
  namespace isa_avx2 { extern const Type name##_table; }                                     \
  namespace isa_avx512 { extern const Type name##_table; }                                   \
  const Type& name(::tapegrad::Isa isa) {                                                     \
    static const Type* const tables[] = {&isa_baseline::name##_table, &isa_avx2::name##_table, \
                                         &isa_avx512::name##_table};                           \
    return *tables[::tapegrad::runnable_index(isa)];                                           \
  }
#else
#define TAPEGRAD_ISA_DISPATCH(Type, name)                     \
  namespace isa_baseline { extern const Type name##_table; } \
  const Type& name(::tapegrad::Isa isa) {                     \
    ::tapegrad::runnable_index(isa);                          \
    return isa_baseline::name##_table;                        \
  }
#endif
