#include "tapegrad/ops/slice.h"

#include <algorithm>

#include "tapegrad/parallel.h"

namespace tapegrad {

// x viewed as (outer, d, inner); the slice keeps rows [start, end) of the middle dimension:
//   y[o, k, i] = x[o, start + k, i]      dx[o, start + k, i] += dy[o, k, i]   (0 elsewhere)

template <typename T>
Var<T> slice(Var<T> x, int dim, int64_t start, int64_t end) {
  const Shape in = x.shape();
  check(in.rank() >= 1, "slice: cannot slice a scalar");
  const int k = in.normalize(dim);
  const int64_t d = in[k];
  const auto clamp = [d](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + d : v, 0, d); };
  const int64_t b = clamp(start), e = std::max(b, clamp(end));
  Shape out = in;
  out[k] = e - b;
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < k; ++i) outer *= in[i];
  for (int i = k + 1; i < in.rank(); ++i) inner *= in[i];
  const int64_t width = (e - b) * inner, row = d * inner, skip = b * inner;
  Tape<T>& tape = x.tape();
  Var<T> y = tape.make_output("slice", out, {x});
  const T* xd = x.data();
  T* yd = y.data();
  parallel_for(outer, width, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) std::copy_n(xd + o * row + skip, width, yd + o * width);
  });
  tape.record("slice", {x}, y, [outer, width, row, skip](const T* dy, T* const* dx) {
    parallel_for(outer, width, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        T* g = dx[0] + o * row + skip;
        for (int64_t i = 0; i < width; ++i) g[i] += dy[o * width + i];
      }
    });
  });
  return y;
}

template Var<float> slice(Var<float>, int, int64_t, int64_t);
template Var<double> slice(Var<double>, int, int64_t, int64_t);

}  // namespace tapegrad
