#include "tapegrad/ops/concat.h"

#include <algorithm>
#include <array>

#include "tapegrad/parallel.h"

namespace tapegrad {

// Viewing each input m as (outer, d_m, inner), the output is (outer, sum_m d_m, inner) and input
// m occupies the slab [offset_m, offset_m + d_m) of every outer row:
//   y[o, offset_m + k, i] = x_m[o, k, i]      dx_m[o, k, i] += dy[o, offset_m + k, i]

template <typename T>
Var<T> concat(std::span<const Var<T>> xs, int dim) {
  check(!xs.empty(), "concat: no tensors given");
  check(xs.size() <= static_cast<size_t>(Tape<T>::kMaxInputs), "concat: ", xs.size(), " tensors, at most ",
        Tape<T>::kMaxInputs, " per call (concatenate in steps)");
  const Shape first = xs[0].shape();
  check(first.rank() >= 1, "concat: cannot concatenate scalars");
  const int k = first.normalize(dim);
  Shape out = first;
  out[k] = 0;
  std::array<int64_t, Tape<T>::kMaxInputs> width{}, offset{};
  for (size_t m = 0; m < xs.size(); ++m) {
    check(&xs[m].tape() == &xs[0].tape(), "concat: tensors ", 0, " and ", m, " are on different tapes");
    const Shape s = xs[m].shape();
    bool agree = s.rank() == first.rank();
    for (int i = 0; agree && i < s.rank(); ++i) agree = i == k || s[i] == first[i];
    check(agree, "concat: tensor ", m, " has shape ", s, ", tensor 0 has ", first, " (all dims but ", dim,
          " must agree)");
    offset[m] = out[k];
    width[m] = s[k];
    out[k] += s[k];
  }
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < k; ++i) outer *= first[i];
  for (int i = k + 1; i < first.rank(); ++i) inner *= first[i];
  const int64_t total = out[k];
  Tape<T>& tape = xs[0].tape();
  Var<T> y = tape.make_output("concat", out, xs);
  std::array<const T*, Tape<T>::kMaxInputs> src{};
  for (size_t m = 0; m < xs.size(); ++m) src[m] = xs[m].data();
  const int n = static_cast<int>(xs.size());
  T* yd = y.data();
  parallel_for(outer, total * inner, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o)
      for (int m = 0; m < n; ++m)
        std::copy_n(src[m] + o * width[m] * inner, width[m] * inner, yd + (o * total + offset[m]) * inner);
  });
  tape.record("concat", xs, y, [n, outer, inner, total, width, offset](const T* dy, T* const* dx) {
    parallel_for(outer, total * inner, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o)
        for (int m = 0; m < n; ++m) {
          if (dx[m] == nullptr) continue;
          T* d = dx[m] + o * width[m] * inner;
          const T* g = dy + (o * total + offset[m]) * inner;
          for (int64_t i = 0; i < width[m] * inner; ++i) d[i] += g[i];
        }
    });
  });
  return y;
}

template Var<float> concat(std::span<const Var<float>>, int);
template Var<double> concat(std::span<const Var<double>>, int);

}  // namespace tapegrad
