// Element-wise transcendental functions over arrays, for the kernels.
//
// float: Eigen's vectorised implementations (AVX2/AVX-512 polynomial and rational
// approximations, within a few ulp of the correctly rounded result). glibc's scalar tanhf and
// expf made GELU alone ~40 % of a training step (perf, L4 C128 T64 B12).
// double: the C library's std::exp / std::tanh. The double path is the reference that gradcheck
// differentiates numerically, so it must be the exact function whose derivative backward uses.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdint>
#include <type_traits>

// In a kernel file (isa_kernel.h) these functions are that ISA's own copies.
#ifdef TAPEGRAD_ISA_NS
#define TAPEGRAD_VMATH_NS TAPEGRAD_ISA_NS
#else
#define TAPEGRAD_VMATH_NS isa_library
#endif

namespace tapegrad::vmath {
inline namespace TAPEGRAD_VMATH_NS {

// Every float element goes through the same packet code whatever its address: fixed-size blocks
// of kBlock with unaligned loads and stores; a last partial block is the block that ends at n,
// overlapping the one before (loaded before anything is written, so in-place use stays exact),
// and a range shorter than one block is padded into a local one.
// A dynamic-size Eigen expression would instead peel elements up to the first aligned address
// and compute them with the scalar libm function (other last bits), so results would follow the
// allocator. tests/lib/test_vmath.cpp places the same
// values at every offset of a line and demands identical bits.
inline constexpr int kBlock = 16;
using Block = Eigen::Array<float, kBlock, 1>;

// Lane k of the block holds k.
inline Block lane_index() { return Block::LinSpaced(kBlock, 0.0f, static_cast<float>(kBlock - 1)); }

// y[i] = f(x)[i] over [0, n), f: const Block& -> Block. In place allowed.
template <typename F>
inline void map_blocks(float* y, const float* x, int64_t n, F f) {
  if (n < kBlock) {
    Block pad = Block::Zero();
    std::copy(x, x + n, pad.data());
    const Block r = f(pad);
    std::copy(r.data(), r.data() + n, y);
    return;
  }
  const Block last(Eigen::Map<const Block>(x + n - kBlock));
  for (int64_t i = 0; i + kBlock <= n; i += kBlock) Eigen::Map<Block>(y + i) = f(Block(Eigen::Map<const Block>(x + i)));
  if (n % kBlock) Eigen::Map<Block>(y + n - kBlock) = f(last);  // rewrites the overlap with the same values
}

template <typename T>
inline void exp(T* y, const T* x, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    map_blocks(y, x, n, [](const Block& b) -> Block { return b.exp(); });
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
  }
}

template <typename T>
inline void tanh(T* y, const T* x, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    map_blocks(y, x, n, [](const Block& b) -> Block { return b.tanh(); });
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
  }
}

template <typename T>
inline void log(T* y, const T* x, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    map_blocks(y, x, n, [](const Block& b) -> Block { return b.log(); });
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = std::log(x[i]);
  }
}

// y = 1 / (1 + exp(-x)). In IEEE arithmetic this form is exact at both extremes: exp(-x)
// overflowing to +inf gives 0, underflowing to 0 gives 1 — no branch needed.
template <typename T>
inline void sigmoid(T* y, const T* x, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    map_blocks(y, x, n, [](const Block& b) -> Block { return 1.0f / (1.0f + (-b).exp()); });
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = T(1) / (T(1) + std::exp(-x[i]));
  }
}

// Reductions. GCC does not vectorise a plain `acc += x[i]` loop without -ffast-math (it may not
// reassociate), and Eigen's vectorised sum() peels elements up to the first aligned address, so
// its association order moves with where the allocator put the data — two identical runs could
// differ in the last bit. These sums fix the order by n alone: kLanes partial sums, lane j taking
// the elements i ≡ j (mod kLanes), folded pairwise at the end. The lane loops are explicit
// element-wise work that GCC vectorises on its own: 256 bytes of lanes (four AVX-512 or eight
// AVX2 accumulators, enough to hide the add latency), then 64-byte steps for a shorter rest
// (rows of a 32-wide head, say), then single elements.
// The fold is unrolled at compile time, one level per width: with the width a runtime loop
// variable GCC left its inner loops scalar, through the stack — 60 dependent adds per reduction,
// the largest cost of LayerNorm at C = 64 (perf). The same adds in the same order: bitwise as before.
template <int kLanes, typename Acc>
inline Acc fold_lanes(Acc* lane) {
  if constexpr (kLanes == 1) {
    return lane[0];
  } else {
    constexpr int kHalf = kLanes / 2;
    for (int j = 0; j < kHalf; ++j) lane[j] += lane[j + kHalf];
    return fold_lanes<kHalf>(lane);
  }
}

template <typename Acc, typename Term>
inline Acc lane_sum(int64_t n, Term term) {
  constexpr int kLanes = 256 / static_cast<int>(sizeof(Acc)), kStep = 64 / static_cast<int>(sizeof(Acc));
  Acc lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lane[j] += term(i + j);
  for (; i + kStep <= n; i += kStep)
    for (int j = 0; j < kStep; ++j) lane[j] += term(i + j);
  for (int j = 0; i < n; ++i, ++j) lane[j] += term(i);
  return fold_lanes<kLanes>(lane);
}

template <typename T>
inline T sum(const T* x, int64_t n) {
  return lane_sum<T>(n, [x](int64_t i) { return x[i]; });
}
template <typename T>
inline T dot(const T* a, const T* b, int64_t n) {
  return lane_sum<T>(n, [a, b](int64_t i) { return a[i] * b[i]; });
}
// sum of (x - shift)^2
template <typename T>
inline T sum_sq_dev(const T* x, T shift, int64_t n) {
  return lane_sum<T>(n, [x, shift](int64_t i) { return (x[i] - shift) * (x[i] - shift); });
}
// sum of x^2 accumulated in double.
template <typename T>
inline double sum_squares(const T* x, int64_t n) {
  return lane_sum<double>(n, [x](int64_t i) { return static_cast<double>(x[i]) * static_cast<double>(x[i]); });
}
// sum of (a - b)^2 accumulated in double.
template <typename T>
inline double sum_squared_diff(const T* a, const T* b, int64_t n) {
  return lane_sum<double>(n, [a, b](int64_t i) {
    const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    return d * d;
  });
}
// Largest element. Exact in any order for numbers; blocked by index anyway, so that where a NaN
// or a signed zero wins (packet and scalar max treat them differently) never follows the address.
template <typename T>
inline T max(const T* x, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    if (n < kBlock) {
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t i = 0; i < n; ++i) m = std::max(m, x[i]);
      return m;
    }
    Block m(Eigen::Map<const Block>(x + n - kBlock));  // the last block; overlap is harmless for a max
    for (int64_t i = 0; i + kBlock <= n; i += kBlock) m = m.max(Block(Eigen::Map<const Block>(x + i)));
    return m.maxCoeff();
  } else {
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t i = 0; i < n; ++i) m = std::max(m, x[i]);
    return m;
  }
}

// y = exp(x - shift), in place allowed; returns sum(y), accumulated in T in an order fixed by n.
// float: one pass — each block is exponentiated by Eigen (fixed size, unaligned loads, so no
// peeling) and added to the lanes while still in registers; the last partial block is the one
// ending at n, its lanes already counted masked out — or, for a tail of at most kScalarTail
// elements (a vocabulary of 65, say), scalar exp, cheaper than a whole block. Fewer than kBlock
// elements: a scalar loop. Every choice depends on n alone.
template <typename T>
inline T exp_shifted_sum(T* y, const T* x, T shift, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    if (n < kBlock) {
      float s = 0;
      for (int64_t i = 0; i < n; ++i) s += (y[i] = std::exp(x[i] - shift));
      return s;
    }
    const Block last(Eigen::Map<const Block>(x + n - kBlock));
    Block lanes = Block::Zero();
    int64_t i = 0;
    for (; i + kBlock <= n; i += kBlock) {
      const Block e = (Eigen::Map<const Block>(x + i) - shift).exp();
      Eigen::Map<Block>(y + i) = e;
      lanes += e;
    }
    constexpr int64_t kScalarTail = 4;
    float tail = 0;
    if (n - i > kScalarTail) {
      const Block e = (last - shift).exp();
      Eigen::Map<Block>(y + n - kBlock) = e;
      lanes += (lane_index() >= static_cast<float>(kBlock - (n - i))).select(e, Block::Zero());
    } else {
      for (; i < n; ++i) tail += (y[i] = std::exp(x[i] - shift));
    }
    // pairwise, as fold_lanes, kept in registers
    const Eigen::Array<float, 8, 1> h8 = lanes.head<8>() + lanes.tail<8>();
    const Eigen::Array<float, 4, 1> h4 = h8.head<4>() + h8.tail<4>();
    return ((h4[0] + h4[2]) + (h4[1] + h4[3])) + tail;
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i] - shift);
    return sum(y, n);
  }
}

}  // namespace TAPEGRAD_VMATH_NS
}  // namespace tapegrad::vmath
