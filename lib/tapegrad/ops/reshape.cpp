#include "tapegrad/ops/reshape.h"

#include <array>

#include "tapegrad/parallel.h"

namespace tapegrad {

// reshape is the identity on the elements, so dx = dy (the gradient is viewed back).
// transpose is a permutation of the elements, so dx is dy permuted back: the same swap of dims.

template <typename T>
Var<T> reshape(Var<T> x, Shape shape) {
  const Shape in = x.shape();
  check(shape.numel() == in.numel(), "reshape: cannot reshape ", in, " (", in.numel(), " elements) to ",
        shape, " (", shape.numel(), " elements)");
  Tape<T>& tape = x.tape();
  Var<T> y = tape.make_alias("reshape", x, shape);
  const int64_t n = in.numel();
  tape.record("reshape", {x}, y, [n](const T* dy, T* const* dx) {
    parallel_for(n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dx[0][i] += dy[i];
    });
  });
  return y;
}

template <typename T>
Var<T> reshape(Var<T> x, std::initializer_list<int64_t> dims) {
  const int64_t n = x.shape().numel();
  int64_t known = 1;
  int inferred = -1, i = 0;
  for (int64_t d : dims) {
    if (d == -1) {
      check(inferred < 0, "reshape: more than one -1 in the target shape for ", x.shape());
      inferred = i;
    } else {
      check(d >= 0, "reshape: negative dimension ", d, " for ", x.shape());
      known *= d;
    }
    ++i;
  }
  Shape shape;
  i = 0;
  for (int64_t d : dims) {
    if (i++ == inferred) {
      check(known > 0 && n % known == 0, "reshape: cannot infer -1 when reshaping ", x.shape(),
            " (", n, " elements are not a multiple of ", known, ")");
      d = n / known;
    }
    shape.push_back(d);
  }
  return reshape(x, shape);
}

template <typename T>
void transpose_copy(T* dst, const T* src, const Shape& shape, int d0, int d1, bool accumulate) {
  // Walk src in order; compute each element's destination offset from the swapped strides.
  const int rank = shape.rank();
  std::array<int64_t, Shape::kMaxRank> out_strides{};
  Shape out = shape;
  std::swap(out[d0], out[d1]);
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    out_strides[d] = stride;
    stride *= out[d];
  }
  std::swap(out_strides[d0], out_strides[d1]);  // stride in dst of each *src* dimension
  // Pad to rank 4 from the front so one loop nest serves every rank.
  std::array<int64_t, 4> n{1, 1, 1, 1}, s{0, 0, 0, 0};
  for (int d = 0; d < rank; ++d) {
    n[4 - rank + d] = shape[d];
    s[4 - rank + d] = out_strides[d];
  }
  parallel_for(n[0] * n[1], n[2] * n[3], [&](int64_t ab0, int64_t ab1) {
    for (int64_t ab = ab0; ab < ab1; ++ab) {
      const int64_t a = ab / n[1], b = ab % n[1];
      const T* in = src + ab * n[2] * n[3];
      for (int64_t c = 0; c < n[2]; ++c)
        for (int64_t e = 0; e < n[3]; ++e) {
          T& o = dst[a * s[0] + b * s[1] + c * s[2] + e * s[3]];
          const T v = in[c * n[3] + e];
          o = accumulate ? o + v : v;
        }
    }
  });
}

template <typename T>
Var<T> transpose(Var<T> x, int dim0, int dim1) {
  const Shape in = x.shape();
  check(in.rank() >= 2, "transpose: needs at least 2 dims, got ", in);
  const int d0 = in.normalize(dim0), d1 = in.normalize(dim1);
  Shape out = in;
  std::swap(out[d0], out[d1]);
  Tape<T>& tape = x.tape();
  Var<T> y = tape.make_output("transpose", out, {x});
  transpose_copy(y.data(), x.data(), in, d0, d1, false);
  tape.record("transpose", {x}, y, [out, d0, d1](const T* dy, T* const* dx) {
    transpose_copy(dx[0], dy, out, d0, d1, true);
  });
  return y;
}

// permute: y[j] = x[src(j)] with the result's dim i being x's dim perm[i]; backward scatters dy
// back through the same map (every element is read once, so dx[src(j)] += dy[j] has no races).
namespace {
struct PermuteMap {
  std::array<int64_t, Shape::kMaxRank> out_dims{1, 1, 1, 1}, src_stride{0, 0, 0, 0};
};

PermuteMap permute_map(const Shape& in, std::initializer_list<int> perm, Shape& out) {
  check(static_cast<int>(perm.size()) == in.rank(), "permute: ", perm.size(), " dims given for ", in, " (rank ",
        in.rank(), ")");
  std::array<int64_t, Shape::kMaxRank> stride{};
  int64_t s = 1;
  for (int i = in.rank() - 1; i >= 0; --i) stride[i] = s, s *= in[i];
  std::array<bool, Shape::kMaxRank> seen{};
  PermuteMap m;
  const int pad = Shape::kMaxRank - in.rank();  // leading size-1 dims make every map rank 4
  int i = 0;
  out = Shape();
  for (int p : perm) {
    check(p >= -in.rank() && p < in.rank(), "permute: dim ", p, " out of range for ", in);
    const int d = in.normalize(p);
    check(!seen[d], "permute: dim ", p, " appears twice for ", in);
    seen[d] = true;
    out.push_back(in[d]);
    m.out_dims[pad + i] = in[d];
    m.src_stride[pad + i] = stride[d];
    ++i;
  }
  return m;
}

template <typename T, typename Visit>
void for_each_permuted(const PermuteMap& m, Visit visit) {  // visit(j: result index, src index)
  const auto& d = m.out_dims;
  parallel_for(d[0] * d[1], d[2] * d[3], [&](int64_t b, int64_t e) {
    for (int64_t ab = b; ab < e; ++ab) {
      const int64_t a0 = ab / d[1], a1 = ab % d[1];
      int64_t j = ab * d[2] * d[3];
      for (int64_t a2 = 0; a2 < d[2]; ++a2)
        for (int64_t a3 = 0; a3 < d[3]; ++a3, ++j)
          visit(j, a0 * m.src_stride[0] + a1 * m.src_stride[1] + a2 * m.src_stride[2] + a3 * m.src_stride[3]);
    }
  });
}
}  // namespace

template <typename T>
Var<T> permute(Var<T> x, std::initializer_list<int> perm) {
  Shape out;
  const PermuteMap m = permute_map(x.shape(), perm, out);
  Tape<T>& tape = x.tape();
  Var<T> y = tape.make_output("permute", out, {x});
  const T* xd = x.data();
  T* yd = y.data();
  for_each_permuted<T>(m, [&](int64_t j, int64_t src) { yd[j] = xd[src]; });
  tape.record("permute", {x}, y, [m](const T* dy, T* const* dx) {
    T* g = dx[0];
    for_each_permuted<T>(m, [&](int64_t j, int64_t src) { g[src] += dy[j]; });
  });
  return y;
}

template Var<float> permute(Var<float>, std::initializer_list<int>);
template Var<double> permute(Var<double>, std::initializer_list<int>);
template Var<float> reshape(Var<float>, Shape);
template Var<double> reshape(Var<double>, Shape);
template Var<float> reshape(Var<float>, std::initializer_list<int64_t>);
template Var<double> reshape(Var<double>, std::initializer_list<int64_t>);
template Var<float> transpose(Var<float>, int, int);
template Var<double> transpose(Var<double>, int, int);
template void transpose_copy<float>(float*, const float*, const Shape&, int, int, bool);
template void transpose_copy<double>(double*, const double*, const Shape&, int, int, bool);

}  // namespace tapegrad
