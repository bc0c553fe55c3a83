#include "tapegrad/nn/mlp.h"

#include <algorithm>

#include "tapegrad/gemm_bf16.h"
#include "tapegrad/nn/init.h"
#include "tapegrad/nn/linear.h"
#include "tapegrad/ops/gelu.h"
#include "tapegrad/ops/silu.h"
#include "tapegrad/parallel.h"

namespace tapegrad::nn {

// Backward. In the forward pass h = fc(x), a = act(h), out = proj(a); so now
//   da = dout W_proj, dW_proj += dout^T a, db_proj += sum dout         (linear_backward)
//   gelu:   dh = gelu'(h) * da                                         (gelu_backward)
//   swiglu: a = silu(g) u  =>  dg = da * u * silu'(g),  du = da * silu(g)
//   dx = dh W_fc, dW_fc += dh^T x, db_fc += sum dh                     (linear_backward)
// Cached: h and a (and, in bf16 on the emulated path, x rounded). Backward's buffers (da, dh) are the tape's workspace, shared by every layer.
// Both passes run the row-local work (everything but dW and db) as one parallel region over
// slabs of rows; the reference for their agreement is the op-by-op composition (tests/nn/test_mlp.cpp).

std::string to_string(MlpActivation a) { return a == MlpActivation::kGelu ? "gelu" : "swiglu"; }

int64_t default_mlp_hidden(int64_t dim, MlpActivation a) {
  if (a == MlpActivation::kGelu) return 4 * dim;
  return ((8 * dim + 2) / 3 + 7) / 8 * 8;
}

// SwiGLU's kernels are swiglu_kernels.cpp's (one copy per ISA); nn/isa_dispatch.cpp picks.
template <typename T>
void swiglu_forward(T* a, const T* h, int64_t rows, int64_t H) {
  swiglu_kernels().get<T>().forward(a, h, rows, H);
}

template <typename T>
void swiglu_backward(T* dh, const T* h, const T* da, int64_t rows, int64_t H, bool accumulate) {
  swiglu_kernels().get<T>().backward(dh, h, da, rows, H, accumulate);
}

template <typename T>
Var<T> mlp(Var<T> x, Var<T> w_fc, Var<T> w_proj, Var<T> b_fc, Var<T> b_proj, MlpActivation kind) {
  const Shape xs = x.shape();
  check(xs.rank() >= 1, "mlp: input needs at least one dim, got ", xs);
  const int64_t C = xs.last(), rows = xs.rows();
  const int64_t width = w_fc.shape()[0];  // H (gelu) or 2H (swiglu)
  const int64_t H = kind == MlpActivation::kGelu ? width : width / 2;
  check(w_fc.shape() == Shape{width, C} && (kind == MlpActivation::kGelu || width % 2 == 0) &&
            w_proj.shape() == Shape{C, H},
        "mlp: weights ", w_fc.shape(), " and ", w_proj.shape(), " do not fit input ", xs, " for a ", to_string(kind),
        " MLP (expected (", kind == MlpActivation::kGelu ? "H" : "2H", ",", C, ") and (", C, ",H))");
  const bool has_bias = b_fc.defined();
  check(has_bias == b_proj.defined(), "mlp: give both biases or neither");
  check(!has_bias || (b_fc.shape() == Shape{width} && b_proj.shape() == Shape{C}), "mlp: biases must be (", width,
        ") and (", C, ")");

  Tape<T>& tape = x.tape();
  const OpInputs<T> inputs{x, w_fc, w_proj, b_fc, b_proj};
  Var<T> out = tape.make_output("mlp", xs, inputs);
  T* h = tape.template scratch<T>(rows * width);
  T* a = tape.template scratch<T>(rows * H);
  // Rows are independent through fc -> activation -> proj, so one parallel region runs the whole
  // forward: each thread takes a slab of rows, its GEMMs run single-threaded on that slab (gemm
  // inside a region), and the activation reads the slab of h its own GEMM just wrote, still in
  // that core's cache (bench/RESULTS.md: 0.96-0.98x the op-by-op time).
  const T* bfc = has_bias ? b_fc.data() : nullptr;
  const T* bproj = has_bias ? b_proj.data() : nullptr;
  const int64_t row_work = 2 * C * width + 2 * H * C + 24 * H;
  const Precision p = autocast_state().gemm;
  // bf16 on the emulated path (gemm_bf16.h, round_ahead): x is rounded once for fc and dW_fc, and the
  // activation a as it is written (proj and dW_proj read only its bf16 value).
  const bool ahead = round_ahead<T>(p);
  T* xr = ahead ? tape.template scratch<T>(rows * C) : nullptr;
  // Each weight is read by every slab's GEMM (and by backward's): rounded once here unless the
  // step's operand cache makes its form (linear.h, rounded_weight).
  const WeightOperand<T> wfo = rounded_weight(tape, w_fc.data(), width * C, ahead);
  const WeightOperand<T> wpo = rounded_weight(tape, w_proj.data(), C * H, ahead);
  parallel_for(rows, row_work, [&, xd = x.data(), wf = wfo.w, wp = wpo.w, o = out.data()](int64_t r0, int64_t r1) {
    const int64_t n = r1 - r0;
    const T* xin = xd + r0 * C;
    if (ahead) {
      round_ahead_into(xr + r0 * C, xin, n * C);
      xin = xr + r0 * C;
    }
    linear_forward(h + r0 * width, xin, wf, bfc, n, C, width, p, {.x = ahead, .w = wfo.rounded});
    if (kind == MlpActivation::kGelu) {
      gelu_forward(a + r0 * H, h + r0 * width, n * H, ahead);
    } else {
      swiglu_forward(a + r0 * H, h + r0 * width, n, H);
      if (ahead) round_ahead_into(a + r0 * H, a + r0 * H, n * H);
    }
    linear_forward(o + r0 * C, a + r0 * H, wp, bproj, n, H, C, p, {.x = ahead, .w = wpo.rounded});
  });
  if (!out.requires_grad()) return out;

  tape.record("mlp", inputs, out,
              [&tape, kind, rows, C, H, width, has_bias, row_work, xd = ahead ? xr : x.data(), wfo, wpo, h, a, p,
               ahead](const T* dout, T* const* din) {
                const T *wf = wfo.w, *wp = wpo.w;
                T* da = tape.template workspace<T>(rows * H);
                T* dh = tape.template workspace<T>(rows * width);
                // Rounded ahead (bf16, emulated path): dout once for da, dW_proj and db_proj; dh in
                // place as it is written, for dx, dW_fc and db_fc.
                T* dout_r = ahead ? tape.template workspace<T>(rows * C) : nullptr;
                // Row-local, one region as in the forward: da = dout W_proj, dh = act'(h) da
                // (written, not added: dh is this closure's workspace, so it needs no zero-fill),
                // dx += dh W_fc.
                parallel_for(rows, row_work, [&](int64_t r0, int64_t r1) {
                  const int64_t n = r1 - r0;
                  if (ahead) round_ahead_into(dout_r + r0 * C, dout + r0 * C, n * C);
                  linear_backward<T>(da + r0 * H, nullptr, nullptr, dout + r0 * C, nullptr, wp, n, H, C, {.dx = false}, p,
                                     {.dy = ahead ? dout_r + r0 * C : nullptr, .w = wpo.rounded});
                  if (kind == MlpActivation::kGelu) {
                    gelu_backward(dh + r0 * width, h + r0 * width, da + r0 * H, n * H, false, ahead);
                  } else {
                    swiglu_backward(dh + r0 * width, h + r0 * width, da + r0 * H, n, H, false);
                    if (ahead) round_ahead_into(dh + r0 * width, dh + r0 * width, n * width);
                  }
                  if (din[0])
                    linear_backward<T>(din[0] + r0 * C, nullptr, nullptr, dh + r0 * width, nullptr, wf, n, C, width,
                                       {.dx = !tape.din_fresh(0)}, p,
                                       {.dy = ahead ? dh + r0 * width : nullptr, .w = wfo.rounded});
                });
                // Weight and bias gradients sum over all rows: GEMMs split over their outputs.
                // Each is written, not added, when the tape hands its buffer over unwritten.
                const auto fresh = [&](int i) { return has_bias || i < 3 ? tape.din_fresh(i) : false; };
                linear_backward<T>(nullptr, din[2], has_bias ? din[4] : nullptr, dout, a, wp, rows, H, C,
                                   {.dw = !fresh(2), .db = !fresh(4)}, p, {.x = ahead, .dy = dout_r});
                linear_backward<T>(nullptr, din[1], has_bias ? din[3] : nullptr, dh, xd, wf, rows, C, width,
                                   {.dw = !fresh(1), .db = !fresh(3)}, p, {.x = ahead, .dy = ahead ? dh : nullptr});
              },
              /*assigns=*/has_bias ? 0b11111u : 0b111u);
  return out;
}

template <typename T>
MLP<T>::MLP(MlpOptions o) : options_(o) {
  check(o.dim > 0 && o.hidden >= 0, "MLP: dim must be positive and hidden >= 0, got dim=", o.dim, " hidden=", o.hidden);
  if (options_.hidden == 0) options_.hidden = default_mlp_hidden(o.dim, o.activation);
  const int64_t H = options_.hidden, width = o.activation == MlpActivation::kGelu ? H : 2 * H;
  // Dotted names "fc.weight", "proj.weight": the layout torch users expect from nanoGPT's c_fc/c_proj.
  w_fc_ = &this->add_parameter("fc.weight", Tensor<T>(Shape{width, o.dim}));
  w_proj_ = &this->add_parameter("proj.weight", Tensor<T>(Shape{o.dim, H}));
  if (o.bias) {
    b_fc_ = &this->add_parameter("fc.bias", Tensor<T>(Shape{width}));
    b_proj_ = &this->add_parameter("proj.bias", Tensor<T>(Shape{o.dim}));
  }
  Rng rng = default_rng();
  reset_parameters(rng);
}

template <typename T>
void MLP<T>::reset_parameters(Rng& rng) {
  init::linear(w_fc_->value(), b_fc_ ? &b_fc_->value() : nullptr, rng, options_.init_std, options_.dim);
  init::linear(w_proj_->value(), b_proj_ ? &b_proj_->value() : nullptr, rng, options_.proj_init_std, options_.hidden);
}

template <typename T>
Var<T> MLP<T>::forward(Var<T> x) {
  Tape<T>& tape = x.tape();
  return mlp(x, tape.param(*w_fc_), tape.param(*w_proj_), b_fc_ ? tape.param(*b_fc_) : Var<T>{},
             b_proj_ ? tape.param(*b_proj_) : Var<T>{}, options_.activation);
}

template <typename T>
std::string MLP<T>::options_repr() const {
  return cat("dim=", options_.dim, ", hidden=", options_.hidden, ", activation=", to_string(options_.activation),
             ", bias=", options_.bias ? "true" : "false");
}

template void swiglu_forward<float>(float*, const float*, int64_t, int64_t);
template void swiglu_forward<double>(double*, const double*, int64_t, int64_t);
template void swiglu_backward<float>(float*, const float*, const float*, int64_t, int64_t, bool);
template void swiglu_backward<double>(double*, const double*, const double*, int64_t, int64_t, bool);
template Var<float> mlp(Var<float>, Var<float>, Var<float>, Var<float>, Var<float>, MlpActivation);
template Var<double> mlp(Var<double>, Var<double>, Var<double>, Var<double>, Var<double>, MlpActivation);
template class MLP<float>;
template class MLP<double>;

}  // namespace tapegrad::nn
