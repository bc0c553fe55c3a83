// Element-wise transcendental functions over arrays, for the kernels.
//
// float: Eigen's vectorised implementations (AVX2/AVX-512 polynomial and rational
// approximations, within a few ulp of the correctly rounded result). glibc's scalar tanhf and
// expf made GELU alone ~40 % of a training step (perf, L4 C128 T64 B12).
// double: the C library's std::exp / std::tanh. The double path is the reference that gradcheck
// differentiates numerically, so it must be the exact function whose derivative backward uses.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace tapegrad::vmath {

template <typename T>
inline void exp(T* y, const T* x, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    Eigen::Map<Eigen::ArrayXf>(y, n) = Eigen::Map<const Eigen::ArrayXf>(x, n).exp();
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
  }
}

template <typename T>
inline void tanh(T* y, const T* x, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    Eigen::Map<Eigen::ArrayXf>(y, n) = Eigen::Map<const Eigen::ArrayXf>(x, n).tanh();
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
  }
}

// y = 1 / (1 + exp(-x)). In IEEE arithmetic this form is exact at both extremes: exp(-x)
// overflowing to +inf gives 0, underflowing to 0 gives 1 — no branch needed.
template <typename T>
inline void sigmoid(T* y, const T* x, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    Eigen::Map<Eigen::ArrayXf>(y, n) = 1.0f / (1.0f + (-Eigen::Map<const Eigen::ArrayXf>(x, n)).exp());
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = T(1) / (T(1) + std::exp(-x[i]));
  }
}

// y = exp(x - shift), in place allowed; returns sum(y), accumulated in T.
template <typename T>
inline T exp_shifted_sum(T* y, const T* x, T shift, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    Eigen::Map<Eigen::ArrayXf> out(y, n);
    out = (Eigen::Map<const Eigen::ArrayXf>(x, n) - shift).exp();
    return out.sum();
  } else {
    T total = 0;
    for (int64_t i = 0; i < n; ++i) total += (y[i] = std::exp(x[i] - shift));
    return total;
  }
}

// Reductions. GCC does not vectorise float reductions without -ffast-math (it may not
// reassociate); Eigen's are vectorised with an association order fixed by n and the pointers'
// alignment — the same at every call of a step, so results stay bitwise reproducible.
template <typename T>
using ConstArray = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

template <typename T>
inline T sum(const T* x, int64_t n) {
  return n ? ConstArray<T>(x, n).sum() : T(0);
}
template <typename T>
inline T max(const T* x, int64_t n) {
  return ConstArray<T>(x, n).maxCoeff();
}
template <typename T>
inline T dot(const T* a, const T* b, int64_t n) {
  return n ? (ConstArray<T>(a, n) * ConstArray<T>(b, n)).sum() : T(0);
}
// sum of (x - shift)^2
template <typename T>
inline T sum_sq_dev(const T* x, T shift, int64_t n) {
  return n ? (ConstArray<T>(x, n) - shift).square().sum() : T(0);
}

// sum of x^2 accumulated in double.
template <typename T>
inline double sum_squares(const T* x, int64_t n) {
  return Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(x, n).template cast<double>().square().sum();
}

}  // namespace tapegrad::vmath
