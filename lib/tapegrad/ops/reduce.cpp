#include "tapegrad/ops/reduce.h"

#include <cmath>
#include <cstdint>

#include "tapegrad/parallel.h"

namespace tapegrad {

// y = c * sum_i x_i (c = 1 for sum, 1/n for mean)  =>  dx_i = c dy.
// The forward sum runs in index order with a double accumulator: deterministic and accurate for
// float inputs of any length we use.

namespace {

template <typename T>
Var<T> scaled_sum(const char* op, Var<T> x, bool average) {
  Tape<T>& tape = x.tape();
  const int64_t n = x.shape().numel();
  check(n > 0 || !average, op, ": mean of an empty tensor ", x.shape());
  Var<T> y = tape.make_output(op, Shape{}, {x});
  const T* xd = x.data();
  double acc = 0;
  for (int64_t i = 0; i < n; ++i) acc += xd[i];
  const double c = average ? 1.0 / static_cast<double>(n) : 1.0;
  y.data()[0] = static_cast<T>(acc * c);
  tape.record(op, {x}, y, [n, c](const T* dy, T* const* dx) {
    const T g = static_cast<T>(c * dy[0]);
    parallel_for(n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dx[0][i] += g;
    });
  });
  return y;
}

}  // namespace

template <typename T>
Var<T> sum(Var<T> x) {
  return scaled_sum("sum", x, false);
}

template <typename T>
Var<T> mean(Var<T> x) {
  return scaled_sum("mean", x, true);
}

// Over one dimension, x viewed as (outer, d, inner):
//   sum   y[o, i] = sum_k x[o, k, i]            dx[o, k, i] += dy[o, i]
//   mean  y[o, i] = sum_k x[o, k, i] / d        dx[o, k, i] += dy[o, i] / d
//   max   y[o, i] = x[o, k*, i], k* the first   dx[o, k*, i] += dy[o, i]
//         index of the maximum (kept in tape memory for backward)
// Sums run over k in order with a double accumulator, like the full reductions.

namespace {

enum class Reduce { kSum, kMean, kMax };

struct DimView {
  int64_t outer = 1, d = 1, inner = 1;
  Shape out;
};

DimView view_over(const char* op, const Shape& in, int dim, bool keepdim) {
  check(in.rank() >= 1, op, ": cannot reduce over dim ", dim, " of a scalar");
  const int k = in.normalize(dim);
  DimView v;
  for (int i = 0; i < in.rank(); ++i) {
    if (i < k) v.outer *= in[i];
    if (i > k) v.inner *= in[i];
    if (i != k) v.out.push_back(in[i]);
    else if (keepdim) v.out.push_back(1);
  }
  v.d = in[k];
  check(v.d > 0, op, ": cannot reduce over dim ", dim, " of ", in, ": it is empty");
  return v;
}

template <typename T>
Var<T> reduce_dim(const char* op, Var<T> x, int dim, bool keepdim, Reduce kind) {
  const DimView v = view_over(op, x.shape(), dim, keepdim);
  Tape<T>& tape = x.tape();
  Var<T> y = tape.make_output(op, v.out, {x});
  const T* xd = x.data();
  T* yd = y.data();
  int32_t* arg = kind == Reduce::kMax ? tape.template scratch<int32_t>(v.outer * v.inner) : nullptr;
  check(kind != Reduce::kMax || v.d <= INT32_MAX, op, ": dim of ", v.d, " elements is too long");
  const double c = kind == Reduce::kMean ? 1.0 / static_cast<double>(v.d) : 1.0;
  parallel_for(v.outer * v.inner, v.d, [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) {
      const int64_t o = j / v.inner, i = j % v.inner;
      const T* col = xd + o * v.d * v.inner + i;
      if (kind == Reduce::kMax) {
        int32_t best = 0;
        for (int64_t k = 1; k < v.d; ++k)
          if (col[k * v.inner] > col[best * v.inner] || (std::isnan(col[k * v.inner]) && !std::isnan(col[best * v.inner])))
            best = static_cast<int32_t>(k);
        arg[j] = best;
        yd[j] = col[best * v.inner];
      } else {
        double acc = 0;
        for (int64_t k = 0; k < v.d; ++k) acc += col[k * v.inner];
        yd[j] = static_cast<T>(acc * c);
      }
    }
  });
  tape.record(op, {x}, y, [v, arg, c](const T* dy, T* const* dx) {
    parallel_for(v.outer * v.inner, v.d, [&](int64_t b, int64_t e) {
      for (int64_t j = b; j < e; ++j) {
        T* col = dx[0] + (j / v.inner) * v.d * v.inner + j % v.inner;
        if (arg) {
          col[arg[j] * v.inner] += dy[j];
        } else {
          const T g = static_cast<T>(c * dy[j]);
          for (int64_t k = 0; k < v.d; ++k) col[k * v.inner] += g;
        }
      }
    });
  });
  return y;
}

}  // namespace

template <typename T>
Var<T> sum(Var<T> x, int dim, bool keepdim) {
  return reduce_dim("sum", x, dim, keepdim, Reduce::kSum);
}
template <typename T>
Var<T> mean(Var<T> x, int dim, bool keepdim) {
  return reduce_dim("mean", x, dim, keepdim, Reduce::kMean);
}
template <typename T>
Var<T> max(Var<T> x, int dim, bool keepdim) {
  return reduce_dim("max", x, dim, keepdim, Reduce::kMax);
}

template Var<float> sum(Var<float>, int, bool);
template Var<double> sum(Var<double>, int, bool);
template Var<float> mean(Var<float>, int, bool);
template Var<double> mean(Var<double>, int, bool);
template Var<float> max(Var<float>, int, bool);
template Var<double> max(Var<double>, int, bool);
template Var<float> sum(Var<float>);
template Var<double> sum(Var<double>);
template Var<float> mean(Var<float>);
template Var<double> mean(Var<double>);

}  // namespace tapegrad
