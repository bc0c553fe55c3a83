#include "tapegrad/nn/dyt.h"

#include "tapegrad/ops/add.h"
#include "tapegrad/parallel.h"
#include "tapegrad/vmath.h"

namespace tapegrad::nn {

// Backward, per element with t = tanh(alpha x) and dt/dz = 1 - t^2 at z = alpha x:
//   u      = dy ⊙ gamma ⊙ (1 - t^2)          (dL/dz)
//   dx     = alpha u
//   dalpha = sum over rows and channels of x ⊙ u
//   dgamma = sum over rows of dy ⊙ t,   dbeta = sum over rows of dy
// The channel sums run over rows in order for each channel (parallel over channels) and dalpha's
// per-row parts are added in row order: bitwise the same for any thread count.

template <typename T>
void dyt_forward(T* y, T* t, const T* x, const T* alpha, const T* gamma, const T* beta, int64_t rows, int64_t C) {
  const T a = *alpha;
  parallel_for(rows, 4 * C, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      T* tr = t + r * C;
      const T* xr = x + r * C;
      for (int64_t c = 0; c < C; ++c) tr[c] = a * xr[c];
      vmath::tanh(tr, tr, C);
      T* yr = y + r * C;
      for (int64_t c = 0; c < C; ++c) yr[c] = gamma[c] * tr[c] + (beta ? beta[c] : T(0));
    }
  });
}

template <typename T>
void dyt_backward(T* dx, T* dalpha, T* dgamma, T* dbeta, const T* dy, const T* x, const T* t, const T* alpha,
                  const T* gamma, int64_t rows, int64_t C, double* row_sums) {
  const T a = *alpha;
  parallel_for(rows, 5 * C, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T *dyr = dy + r * C, *xr = x + r * C, *tr = t + r * C;
      double part = 0;  // dalpha sums rows * C terms of both signs: accumulate in double
      for (int64_t c = 0; c < C; ++c) {
        const T u = dyr[c] * gamma[c] * (T(1) - tr[c] * tr[c]);
        if (dx) dx[r * C + c] += a * u;
        part += static_cast<double>(xr[c]) * u;
      }
      row_sums[r] = part;
    }
  });
  if (dalpha) {
    double sum = 0;
    for (int64_t r = 0; r < rows; ++r) sum += row_sums[r];
    *dalpha += static_cast<T>(sum);
  }
  if (dgamma || dbeta) {
    parallel_for(C, 2 * rows, [&](int64_t c0, int64_t c1) {
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = c0; c < c1; ++c) {
          if (dgamma) dgamma[c] += dy[r * C + c] * t[r * C + c];
          if (dbeta) dbeta[c] += dy[r * C + c];
        }
    });
  }
}

template <typename T>
Var<T> dyt(Var<T> x, Var<T> alpha, Var<T> gamma, Var<T> beta) {
  const Shape xs = x.shape();
  check(xs.rank() >= 1 && xs.last() > 0, "dyt: needs a non-empty last dim, got ", xs);
  const int64_t C = xs.last(), rows = xs.rows();
  check(alpha.shape() == Shape{1}, "dyt: alpha ", alpha.shape(), " must be (1) for input ", xs);
  check(gamma.shape() == Shape{C}, "dyt: gamma ", gamma.shape(), " must be (", C, ") for input ", xs);
  if (beta.defined()) check(beta.shape() == Shape{C}, "dyt: beta ", beta.shape(), " must be (", C, ") for input ", xs);
  Tape<T>& tape = x.tape();
  const OpInputs<T> inputs{x, alpha, gamma, beta};
  Var<T> y = tape.make_output("dyt", xs, inputs);
  T* t = tape.template scratch<T>(rows * C);
  double* row_sums = y.requires_grad() ? tape.template scratch<double>(rows) : nullptr;
  dyt_forward(y.data(), t, x.data(), alpha.data(), gamma.data(), beta.defined() ? beta.data() : nullptr, rows, C);
  tape.record("dyt", inputs, y,
              [xd = x.data(), t, ad = alpha.data(), gd = gamma.data(), rows, C, row_sums, has_beta = beta.defined()](
                  const T* dy, T* const* din) {
                dyt_backward(din[0], din[1], din[2], has_beta ? din[3] : nullptr, dy, xd, t, ad, gd, rows, C, row_sums);
              });
  return y;
}

template <typename T>
DyT<T>::DyT(DyTOptions o) : options_(o) {
  check(o.dim > 0, "DyT: dim must be positive, got ", o.dim);
  check(std::isfinite(o.alpha_init), "DyT: alpha_init must be finite, got ", o.alpha_init);
  alpha_ = &this->add_parameter("alpha", Tensor<T>(Shape{1}));
  gamma_ = &this->add_parameter("weight", Tensor<T>(Shape{o.dim}));
  if (o.bias) beta_ = &this->add_parameter("bias", Tensor<T>(Shape{o.dim}));
  Rng unused;
  reset_parameters(unused);
}

template <typename T>
std::unique_ptr<UnaryModule<T>> DyT<T>::from_spec(const NormSpec& spec) {
  return std::make_unique<DyT<T>>(
      DyTOptions{.dim = spec.dim, .alpha_init = spec.dyt_alpha, .bias = spec.bias && spec.dyt_beta});
}

template <typename T>
void DyT<T>::reset_parameters(Rng&) {
  alpha_->value().fill(static_cast<T>(options_.alpha_init));
  gamma_->value().fill(T(1));
  if (beta_) beta_->value().fill(T(0));
}

template <typename T>
Var<T> DyT<T>::forward(Var<T> x) {
  Tape<T>& tape = x.tape();
  return dyt(x, tape.param(*alpha_), tape.param(*gamma_), beta_ ? tape.param(*beta_) : Var<T>());
}

template <typename T>
std::string DyT<T>::options_repr() const {
  return cat(options_.dim, ", alpha_init=", options_.alpha_init, options_.bias ? "" : ", bias=false");
}

template void dyt_forward<float>(float*, float*, const float*, const float*, const float*, const float*, int64_t, int64_t);
template void dyt_forward<double>(double*, double*, const double*, const double*, const double*, const double*, int64_t,
                                  int64_t);
template void dyt_backward<float>(float*, float*, float*, float*, const float*, const float*, const float*, const float*,
                                  const float*, int64_t, int64_t, double*);
template void dyt_backward<double>(double*, double*, double*, double*, const double*, const double*, const double*,
                                   const double*, const double*, int64_t, int64_t, double*);
template Var<float> dyt(Var<float>, Var<float>, Var<float>, Var<float>);
template Var<double> dyt(Var<double>, Var<double>, Var<double>, Var<double>);
template class DyT<float>;
template class DyT<double>;

}  // namespace tapegrad::nn
