#include "tapegrad/ops/embedding.h"

#include <algorithm>

#include "tapegrad/parallel.h"

namespace tapegrad {

// y[n, :] = W[ids[n], :]  =>  dW[v, :] = sum over {n : ids[n] = v} of dy[n, :]   (scatter-add)
// Several positions may hold the same id, so rows of dW collide: backward splits the work by
// columns of C instead of by positions, and each thread adds its columns in position order —
// race-free and deterministic.

template <typename T>
Var<T> embedding(Var<T> weight, std::span<const int32_t> ids, Shape ids_shape) {
  const Shape ws = weight.shape();
  check(ws.rank() == 2, "embedding: weight must be (V, C), got ", ws);
  check(static_cast<int64_t>(ids.size()) == ids_shape.numel(), "embedding: ", ids.size(),
        " ids for ids shape ", ids_shape);
  const int64_t V = ws[0], C = ws[1], N = ids_shape.numel();
  for (int64_t n = 0; n < N; ++n)
    check(ids[n] >= 0 && ids[n] < V, "embedding: id ", ids[n], " at position ", n,
          " is out of range for a table of ", V, " rows");
  Shape out = ids_shape;
  out.push_back(C);

  Tape<T>& tape = weight.tape();
  Var<T> y = tape.make_output("embedding", out, {weight});
  const T* w = weight.data();
  T* yd = y.data();
  parallel_for(N, C, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) std::copy_n(w + ids[n] * C, C, yd + n * C);
  });
  tape.record("embedding", {weight}, y, [id = ids.data(), N, C](const T* dy, T* const* dw) {
    parallel_for(C, N, [&](int64_t c0, int64_t c1) {
      for (int64_t n = 0; n < N; ++n) {
        T* row = dw[0] + id[n] * C;
        const T* g = dy + n * C;
        for (int64_t c = c0; c < c1; ++c) row[c] += g[c];
      }
    });
  });
  return y;
}

template Var<float> embedding(Var<float>, std::span<const int32_t>, Shape);
template Var<double> embedding(Var<double>, std::span<const int32_t>, Shape);

}  // namespace tapegrad
