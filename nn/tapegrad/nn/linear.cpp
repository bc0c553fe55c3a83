#include "tapegrad/nn/linear.h"

#include <algorithm>
#include <type_traits>

#include "tapegrad/bf16_operand_cache.h"
#include "tapegrad/gemm_bf16.h"
#include "tapegrad/nn/init.h"
#include "tapegrad/ops/add.h"
#include "tapegrad/ops/to_bf16.h"
#include "tapegrad/parallel.h"

namespace tapegrad::nn {

// y = x W^T + b over rows r: y[r, o] = sum_i x[r, i] W[o, i] + b[o]
//   dx = dy W          (rows, in)
//   dW += dy^T x       (out, in)   — summed over every row in one GEMM with K = rows
//   db += sum_r dy[r]  (out)
// Forward writes the bias into y first and lets the GEMM accumulate onto it (beta = 1). W is the
// GEMMs' constant operand: in bf16 its rounded or packed form is made once per training step
// (bf16_operand_cache.h). x and dy are each read by two GEMMs, so on the emulated bf16 path the
// op rounds each once (round_ahead) and keeps rounded x, not x, for backward. In bf16 db sums the
// rounded dy as well: the gradient crossing into the Linear is bf16 for all three of its uses, as in
// torch.autocast (the linear's output is bf16, so is the gradient that arrives there) and llm.c
// (its bias gradient sums the bf16 dout).

template <typename T>
WeightOperand<T> rounded_weight(Tape<T>& tape, const T* w, int64_t n, bool ahead) {
  if (!ahead || bf16_operand_cache() != nullptr) return {w, false};
  return {rounded_copy(tape, w, n), true};
}

template <typename T>
void linear_forward(T* y, const T* x, const T* w, const T* b, int64_t rows, int64_t in, int64_t out, Precision p,
                    LinearRounded<T> rounded) {
  if (b != nullptr) {
    parallel_for(rows, out, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) std::copy_n(b, out, y + r * out);
    });
  }
  gemm_at<T>(p, Trans::kNo, Trans::kYes, rows, out, in, T(1), x, in, w, in, b ? T(1) : T(0), y, out,
             {.a_rounded = rounded.x, .b_rounded = rounded.w, .b_constant = true});
}

template <typename T>
void linear_backward(T* dx, T* dw, T* db, const T* dy, const T* x, const T* w, int64_t rows, int64_t in,
                     int64_t out, LinearGradAdd add, Precision p, LinearRounded<T> rounded) {
  const T* g = rounded.dy ? rounded.dy : dy;  // the GEMMs' dy
  const bool g_rounded = rounded.dy != nullptr;
  if (dx)
    gemm_at<T>(p, Trans::kNo, Trans::kNo, rows, in, out, T(1), g, out, w, in, add.dx ? T(1) : T(0), dx, in,
               {.a_rounded = g_rounded, .b_rounded = rounded.w, .b_constant = true});
  if (dw)
    gemm_at<T>(p, Trans::kYes, Trans::kNo, out, in, rows, T(1), g, out, x, in, add.dw ? T(1) : T(0), dw, in,
               {.a_rounded = g_rounded, .b_rounded = rounded.x});
  // Unless the caller rounded dy (the packing paths round it inside the GEMMs), the sum rounds it.
  if (db) bias_backward(db, g, rows, out, add.db, p == Precision::kBf16 && !g_rounded && std::is_same_v<T, float>);
}

template <typename T>
Var<T> linear(Var<T> x, Var<T> w, Var<T> b) {
  const Shape xs = x.shape(), ws = w.shape();
  check(ws.rank() == 2, "linear: weight must be (out, in), got ", ws);
  check(xs.rank() >= 1 && xs.last() == ws[1], "linear: input ", xs, " does not end in in_features = ", ws[1],
        " of weight ", ws);
  check(!b.defined() || b.shape() == Shape{ws[0]}, "linear: bias ", b.defined() ? b.shape() : Shape{},
        " does not match out_features = ", ws[0]);
  const int64_t rows = xs.rows(), in = ws[1], out = ws[0];
  Shape ys = xs;
  ys[-1] = out;
  Tape<T>& tape = x.tape();
  const bool has_bias = b.defined();
  const OpInputs<T> inputs{x, w, b};
  Var<T> y = tape.make_output("linear", ys, inputs);
  const Precision p = autocast_state().gemm;
  const bool ahead = round_ahead<T>(p) && y.requires_grad();
  const T* xd = ahead ? rounded_copy(tape, x.data(), rows * in) : x.data();
  const WeightOperand<T> wo = rounded_weight(tape, w.data(), out * in, ahead && x.requires_grad());
  linear_forward(y.data(), xd, wo.w, has_bias ? b.data() : nullptr, rows, in, out, p, {.x = ahead, .w = wo.rounded});
  // Writes (does not add) each gradient the tape hands over unwritten.
  tape.record(
      "linear", inputs, y,
      [&tape, xd, wo, rows, in, out, has_bias, p, ahead](const T* dy, T* const* din) {
        const LinearGradAdd add{!tape.din_fresh(0), !tape.din_fresh(1), !has_bias || !tape.din_fresh(2)};
        T* dyr = nullptr;
        if (ahead) {
          dyr = tape.template workspace<T>(rows * out);
          round_ahead_into(dyr, dy, rows * out);
        }
        linear_backward(din[0], din[1], has_bias ? din[2] : nullptr, dy, xd, wo.w, rows, in, out, add, p,
                        {.x = ahead, .dy = dyr, .w = wo.rounded});
      },
      /*assigns=*/0b111);
  return y;
}

template <typename T>
Linear<T>::Linear(LinearOptions o) : options_(o) {
  check(o.in > 0 && o.out > 0, "Linear: in and out features must be positive, got in=", o.in, " out=", o.out);
  weight_ = &this->add_parameter("weight", Tensor<T>(Shape{o.out, o.in}));
  if (o.bias) bias_ = &this->add_parameter("bias", Tensor<T>(Shape{o.out}));
  Rng rng = default_rng();
  reset_parameters(rng);
}

template <typename T>
void Linear<T>::reset_parameters(Rng& rng) {
  init::linear(weight_->value(), bias_ ? &bias_->value() : nullptr, rng, options_.init_std, options_.in);
}

template <typename T>
Var<T> Linear<T>::forward(Var<T> x) {
  Tape<T>& tape = x.tape();
  return linear(x, tape.param(*weight_), bias_ ? tape.param(*bias_) : Var<T>{});
}

template <typename T>
std::string Linear<T>::options_repr() const {
  return cat("in=", options_.in, ", out=", options_.out, ", bias=", options_.bias ? "true" : "false");
}

template void linear_forward<float>(float*, const float*, const float*, const float*, int64_t, int64_t, int64_t,
                                    Precision, LinearRounded<float>);
template void linear_forward<double>(double*, const double*, const double*, const double*, int64_t, int64_t,
                                     int64_t, Precision, LinearRounded<double>);
template void linear_backward<float>(float*, float*, float*, const float*, const float*, const float*, int64_t,
                                     int64_t, int64_t, LinearGradAdd, Precision, LinearRounded<float>);
template void linear_backward<double>(double*, double*, double*, const double*, const double*, const double*,
                                      int64_t, int64_t, int64_t, LinearGradAdd, Precision, LinearRounded<double>);
template WeightOperand<float> rounded_weight(Tape<float>&, const float*, int64_t, bool);
template WeightOperand<double> rounded_weight(Tape<double>&, const double*, int64_t, bool);
template Var<float> linear(Var<float>, Var<float>, Var<float>);
template Var<double> linear(Var<double>, Var<double>, Var<double>);
template class Linear<float>;
template class Linear<double>;

}  // namespace tapegrad::nn
