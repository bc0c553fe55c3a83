#include "tapegrad/nn/scalenorm.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "tapegrad/nn/norm_affine.h"
#include "tapegrad/parallel.h"
#include "tapegrad/threads.h"
#include "tapegrad/vmath.h"

namespace tapegrad::nn {

// Backward. Per row, with n = ||x||, r = 1/max(n, eps) and y = g r x:
//   where n > eps:   dr/dx_j = -x_j / n^3 = -r^3 x_j,  so  dy_i/dx_j = g r (delta_ij - r^2 x_i x_j)
//   where clipped:   r = 1/eps is constant,            so  dy_i/dx_j = g r delta_ij
// With k = r^2 (or 0 where clipped), both are one formula:
//   dx = g r (dy - k (x . dy) x)
//   dg = sum over rows of r (x . dy)                  (y = g (r x), linear in g)

template <typename T>
void scalenorm_forward(T* y, T* stats, const T* x, const T* g, int64_t rows, int64_t C, T eps) {
  const T gain = *g;
  parallel_for(rows, 3 * C, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * C;
      T* yr = y + r * C;
      const T n = std::sqrt(vmath::dot(xr, xr, C));
      const T s = T(1) / std::max(n, eps);
      const T gs = gain * s;
      for (int64_t c = 0; c < C; ++c) yr[c] = gs * xr[c];
      stats[r] = s;
      stats[rows + r] = n > eps ? s * s : T(0);
    }
  });
}

template <typename T>
void scalenorm_backward(T* dx, T* dg, const T* dy, const T* x, const T* stats, const T* g, int64_t rows, int64_t C,
                        T* scratch) {
  const T gain = *g;
  // Per-thread partial sums of dg in the scratch (threads own contiguous rows), added in thread
  // order at the end: bitwise reproducible for a thread count.
  std::fill_n(scratch, norm_backward_scratch(C), T(0));
  parallel_for(rows, 5 * C, [&](int64_t r0, int64_t r1) {
    T* part = scratch + static_cast<int64_t>(omp_get_thread_num()) * 4 * C;
    for (int64_t r = r0; r < r1; ++r) {
      const T* dyr = dy + r * C;
      const T* xr = x + r * C;
      const T s = stats[r], k = stats[rows + r];
      const T x_dy = vmath::dot(xr, dyr, C);
      if (dx) {
        T* dxr = dx + r * C;
        const T gs = gain * s, kd = k * x_dy;
        for (int64_t c = 0; c < C; ++c) dxr[c] += gs * (dyr[c] - kd * xr[c]);
      }
      part[0] += s * x_dy;
    }
  });
  if (dg)
    for (int t = 0; t < num_threads(); ++t) *dg += scratch[static_cast<int64_t>(t) * 4 * C];
}

template <typename T>
Var<T> scale_norm(Var<T> x, Var<T> g, double eps) {
  const Shape xs = x.shape();
  check(xs.rank() >= 1 && xs.last() > 0, "scale_norm: needs a non-empty last dim, got ", xs);
  check(g.shape() == Shape{1}, "scale_norm: g ", g.shape(), " must be (1) for input ", xs);
  check(eps > 0, "scale_norm: eps must be > 0, got ", eps);
  const int64_t C = xs.last(), rows = xs.rows();
  Tape<T>& tape = x.tape();
  Var<T> y = tape.make_output("scale_norm", xs, {x, g});
  T* stats = tape.template scratch<T>(2 * rows);
  scalenorm_forward(y.data(), stats, x.data(), g.data(), rows, C, static_cast<T>(eps));
  tape.record("scale_norm", {x, g}, y, [&tape, xd = x.data(), gd = g.data(), stats, rows, C](const T* dy, T* const* din) {
    scalenorm_backward(din[0], din[1], dy, xd, stats, gd, rows, C, tape.template workspace<T>(norm_backward_scratch(C)));
  });
  return y;
}

template <typename T>
ScaleNorm<T>::ScaleNorm(ScaleNormOptions o) : options_(o) {
  check(o.dim > 0, "ScaleNorm: dim must be positive, got ", o.dim);
  check(o.eps > 0, "ScaleNorm: eps must be > 0 (it bounds 1/||x||), got ", o.eps);
  g_ = &this->add_parameter("g", Tensor<T>(Shape{1}));
  Rng unused;
  reset_parameters(unused);
}

template <typename T>
std::unique_ptr<UnaryModule<T>> ScaleNorm<T>::from_spec(const NormSpec& spec) {
  return std::make_unique<ScaleNorm<T>>(ScaleNormOptions{spec.dim, spec.eps});
}

// As QK-norm: p[0] is g; stats as scalenorm_forward's.
template <typename T>
const NormRowKernels<T>* ScaleNorm<T>::row_kernels() {
  static constexpr NormRowKernels<T> kernels{
      2,
      [](int64_t) { return Shape{1}; },
      [](T* y, T* stats, const T* x, const T* const* p, int64_t n, int64_t C, T eps) {
        scalenorm_forward(y, stats, x, p[0], n, C, eps);
      },
      [](T* dx, T* const* dp, const T* dy, const T* x, const T* stats, const T* const* p, int64_t n, int64_t C,
         T* scratch) { scalenorm_backward(dx, dp[0], dy, x, stats, p[0], n, C, scratch); }};
  return &kernels;
}

template <typename T>
void ScaleNorm<T>::reset_parameters(Rng&) {
  g_->value().fill(static_cast<T>(std::sqrt(static_cast<double>(options_.dim))));
}

template <typename T>
Var<T> ScaleNorm<T>::forward(Var<T> x) {
  return scale_norm(x, x.tape().param(*g_), options_.eps);
}

template <typename T>
std::string ScaleNorm<T>::options_repr() const {
  return cat(options_.dim, ", eps=", options_.eps);
}

template void scalenorm_forward<float>(float*, float*, const float*, const float*, int64_t, int64_t, float);
template void scalenorm_forward<double>(double*, double*, const double*, const double*, int64_t, int64_t, double);
template void scalenorm_backward<float>(float*, float*, const float*, const float*, const float*, const float*,
                                        int64_t, int64_t, float*);
template void scalenorm_backward<double>(double*, double*, const double*, const double*, const double*,
                                         const double*, int64_t, int64_t, double*);
template Var<float> scale_norm(Var<float>, Var<float>, double);
template Var<double> scale_norm(Var<double>, Var<double>, double);
template class ScaleNorm<float>;
template class ScaleNorm<double>;

}  // namespace tapegrad::nn
