#include "tapegrad/optim/clip.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <type_traits>

#include "tapegrad/error.h"
#include "tapegrad/parallel.h"
#include "tapegrad/vector_ops.h"
#include "tapegrad/vector_sums.h"
#include "tapegrad/vmath.h"

namespace tapegrad {

template <typename T>
double grad_norm(std::span<Parameter<T>* const> params) {
  return grad_norm(params, std::span<double>());
}

template <typename T>
double grad_norm(std::span<Parameter<T>* const> params, std::span<double> squares) {
  check(squares.empty() || squares.size() == params.size(), "grad_norm: ", squares.size(), " sums for ",
        params.size(), " parameters");
  // Each parameter's sum of squares by one vectorised reduction, and those sums added in
  // parameter order: the same bits on any number of threads. The threads share out whole
  // parameters, a batch of them at a time, their sums kept on the stack.
  constexpr size_t kBatch = 64;
  std::array<double, kBatch> sums;
  double (*const sum_squares)(const T*, int64_t) = [] {
    if constexpr (std::is_same_v<T, float>) return vector_sums().sum_squares;  // at the CPU's width
    else return &vmath::sum_squares<T>;
  }();
  double sq = 0;
  for (size_t first = 0; first < params.size(); first += kBatch) {
    const size_t n = std::min(kBatch, params.size() - first);
    int64_t elements = 0;
    for (size_t k = first; k < first + n; ++k) elements += params[k]->numel();
    parallel_for(static_cast<int64_t>(n), std::max<int64_t>(1, elements / static_cast<int64_t>(n)),
                 [&](int64_t k0, int64_t k1) {
                   for (int64_t k = k0; k < k1; ++k) {
                     const Parameter<T>& p = *params[first + static_cast<size_t>(k)];
                     sums[static_cast<size_t>(k)] = sum_squares(p.grad().data(), p.numel());
                   }
                 });
    for (size_t k = 0; k < n; ++k) {
      sq += sums[k];
      if (!squares.empty()) squares[first + k] = sums[k];
    }
  }
  return std::sqrt(sq);
}

double clip_factor(double norm, double max_norm) {
  return max_norm > 0 && std::isfinite(norm) && norm > max_norm ? max_norm / (norm + 1e-6) : 1.0;  // torch's guard
}

template <typename T>
double clip_grad_norm(std::span<Parameter<T>* const> params, double max_norm) {
  check(!std::isnan(max_norm), "clip_grad_norm: max_norm must be a number (<= 0 turns clipping off), got nan");
  const double norm = grad_norm(params);
  if (clip_factor(norm, max_norm) < 1.0) {
    const T factor = static_cast<T>(clip_factor(norm, max_norm));
    const auto scale = vector_ops().get<T>().scale;
    parallel_for_arrays(static_cast<int64_t>(params.size()), [&](int64_t k) { return params[static_cast<size_t>(k)]->numel(); },
                        1, [&](int64_t k, int64_t i0, int64_t i1) {
                          scale(params[static_cast<size_t>(k)]->grad().data() + i0, factor, i1 - i0);
                        });
  }
  return norm;
}

template double grad_norm<float>(std::span<Parameter<float>* const>);
template double grad_norm<double>(std::span<Parameter<double>* const>);
template double grad_norm<float>(std::span<Parameter<float>* const>, std::span<double>);
template double grad_norm<double>(std::span<Parameter<double>* const>, std::span<double>);
template double clip_grad_norm<float>(std::span<Parameter<float>* const>, double);
template double clip_grad_norm<double>(std::span<Parameter<double>* const>, double);

}  // namespace tapegrad
