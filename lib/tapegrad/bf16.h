// bfloat16: the top 16 bits of an IEEE float32 (sign, the same 8-bit exponent, 7 mantissa bits),
// so every float32 range is kept and only precision is lost (2^-8 relative). The one conversion
// tapegrad uses, float32 -> bf16 by round-to-nearest-even on the bit pattern:
//   bits + 0x7fff + (bit 16 of bits), then the top half.
// Exact at every edge: a tie (the dropped half exactly 0x8000) goes to the even bf16; a value past
// the largest bf16 by half an ulp or more rounds to Inf, as IEEE says; Inf stays Inf; subnormals
// round as any other value (no flush to zero); a NaN stays a NaN of its sign (the addition could
// carry its payload into Inf, so NaNs are caught first and made quiet). The AVX512-BF16
// conversion instructions treat subnormal inputs as zero, so tapegrad does not use them: every
// kernel path rounds with this function and the operands are the same bits on every path.
#pragma once

#include <bit>
#include <cstdint>

#include "tapegrad/isa.h"

namespace tapegrad {

using bf16_t = uint16_t;  // a bfloat16's bits

constexpr bf16_t to_bf16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<bf16_t>((u >> 16) | 0x0040u);  // NaN, made quiet
  return static_cast<bf16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

constexpr float from_bf16(bf16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

// The float32 nearest-even to f that a bf16 holds exactly: from_bf16(to_bf16(f)), computed on the
// 32-bit pattern without the trip through 16 bits (the low half cleared, not shifted out and back)
// and the NaN test a float compare (one instruction per vector, where the integer test takes three):
// a loop of it vectorises to eight ops a vector, a third faster than the trip (bench/RESULTS.md).
constexpr float round_bf16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t v = f != f ? (u | 0x00400000u) : u + 0x7fffu + ((u >> 16) & 1u);  // NaN: made quiet
  return std::bit_cast<float>(v & 0xffff0000u);
}

// out[i] = round_bf16(x[i]); out may be x. The kernel variant's copy (isa.h), vectorised: the
// same bits from every copy.
void round_bf16(const float* x, float* out, int64_t n);

struct Bf16RoundingFns {
  void (*round)(const float* x, float* out, int64_t n);  // the array round_bf16
};
// The copy of `isa` (active_isa() by default; tests compare every variant).
const Bf16RoundingFns& bf16_rounding(Isa isa = active_isa());

}  // namespace tapegrad
