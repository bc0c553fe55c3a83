// A vector of floats as wide as the kernel variant's registers, and the transpose of a square tile
// of them held in registers. For kernel files only (included after tapegrad/isa_kernel.h): the
// definitions land in the variant's namespace, so each variant's objects keep their own copy.
#pragma once

#ifndef TAPEGRAD_ISA_NS
#error "register_tile.h is for kernel files, compiled once per instruction set (isa_kernel.h)"
#endif

#include <utility>

namespace tapegrad::TAPEGRAD_ISA_NS {

// GCC lowers a generic vector wider than the hardware's to scalar code (a 16-float vector on AVX2
// ran 4-15x slower than the GEMM path), so the width follows the variant.
#if defined(__AVX512F__)
inline constexpr int kW = 16;
#elif defined(__AVX__)
inline constexpr int kW = 8;
#else
inline constexpr int kW = 4;
#endif
using Vec = float __attribute__((vector_size(kW * sizeof(float))));

inline Vec load(const float* p) {
  Vec v;
  __builtin_memcpy(&v, p, sizeof v);  // an unaligned load
  return v;
}
inline void store(float* p, const Vec& v) { __builtin_memcpy(p, &v, sizeof v); }

namespace tile_detail {
// The transpose of a block matrix [[A, B], [C, D]] is [[A^T, C^T], [B^T, D^T]], so swapping the
// off-diagonal s x s blocks of every 2s x 2s block, for s = 1, 2, 4, 8 (the swaps commute; s < kW),
// transposes the tile. Rows i and i + s (i & s == 0) exchange row i's columns c & s != 0 with row
// i + s's columns c & s == 0: one two-source shuffle each, its lane indices constants built from
// the lane numbers (__builtin_shufflevector: GCC >= 12 and clang).
inline constexpr int kLevels = kW == 16 ? 4 : kW == 8 ? 3 : 2;  // log2(kW)

// Row i keeps its columns c & s == 0 and takes row i + s's; row i + s takes row i's, keeps its own.
template <int s, int... c>
inline Vec upper_half_swap(const Vec& a, const Vec& b, std::integer_sequence<int, c...>) {
  return __builtin_shufflevector(a, b, ((c & s) == 0 ? c : kW + c - s)...);
}
template <int s, int... c>
inline Vec lower_half_swap(const Vec& a, const Vec& b, std::integer_sequence<int, c...>) {
  return __builtin_shufflevector(a, b, ((c & s) == 0 ? c + s : kW + c)...);
}

template <int kLevel>
inline void swap_blocks(Vec (&r)[kW]) {
  constexpr int s = 1 << kLevel;
  constexpr auto lanes = std::make_integer_sequence<int, kW>{};
#pragma GCC unroll 16
  for (int i = 0; i < kW; ++i) {
    if (i & s) continue;
    const Vec a = r[i], b = r[i + s];
    r[i] = upper_half_swap<s>(a, b, lanes);
    r[i + s] = lower_half_swap<s>(a, b, lanes);
  }
}

template <int... level>
inline void swap_all(Vec (&r)[kW], std::integer_sequence<int, level...>) {
  (swap_blocks<level>(r), ...);
}
}  // namespace tile_detail

// r (kW rows of kW floats) becomes its transpose, in registers.
inline void transpose_tile(Vec (&r)[kW]) {
  tile_detail::swap_all(r, std::make_integer_sequence<int, tile_detail::kLevels>{});
}

}  // namespace tapegrad::TAPEGRAD_ISA_NS
