#include "tapegrad/rows.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tapegrad/error.h"

namespace tapegrad {

namespace {
// a before b in descending order: NaN first, then larger, ties by lower index.
template <typename T>
bool before(T a, int32_t ia, T b, int32_t ib) {
  const bool na = std::isnan(a), nb = std::isnan(b);
  if (na != nb) return na;
  if (!na && a != b) return a > b;
  return ia < ib;
}
}  // namespace

template <typename T>
std::vector<int32_t> argmax_rows(TensorView<const T> x) {
  const int64_t n = x.shape().last(), rows = x.shape().rows();
  check(n > 0 && n <= INT32_MAX, "argmax_rows: rows of ", n, " elements (at least 1, at most 2^31 - 1)");
  std::vector<int32_t> out(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = x.data() + r * n;
    int32_t best = 0;
    for (int32_t j = 1; j < n; ++j)
      if (before(row[j], j, row[best], best)) best = j;
    out[static_cast<size_t>(r)] = best;
  }
  return out;
}

template <typename T>
TopK<T> topk_rows(TensorView<const T> x, int64_t k) {
  const int64_t n = x.shape().last(), rows = x.shape().rows();
  check(k >= 1 && k <= n && n <= INT32_MAX, "topk_rows: k must be in [1, ", n, "] (the row length), got ", k);
  TopK<T> out;
  out.values.resize(static_cast<size_t>(rows * k));
  out.indices.resize(static_cast<size_t>(rows * k));
  std::vector<int32_t> order(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = x.data() + r * n;
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int32_t a, int32_t b) { return before(row[a], a, row[b], b); });
    for (int64_t i = 0; i < k; ++i) {
      out.indices[static_cast<size_t>(r * k + i)] = order[static_cast<size_t>(i)];
      out.values[static_cast<size_t>(r * k + i)] = row[order[static_cast<size_t>(i)]];
    }
  }
  return out;
}

template std::vector<int32_t> argmax_rows<float>(TensorView<const float>);
template std::vector<int32_t> argmax_rows<double>(TensorView<const double>);
template TopK<float> topk_rows<float>(TensorView<const float>, int64_t);
template TopK<double> topk_rows<double>(TensorView<const double>, int64_t);

}  // namespace tapegrad
