#include "tapegrad/nn/attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "tapegrad/gemm.h"
#include "tapegrad/parallel.h"
#include "tapegrad/vmath.h"

namespace tapegrad::nn {

// Backward, per (batch, head), from the forward S = q k^T s (s = 1/sqrt(HS)), P = softmax(S),
// y = P v. In the forward pass y was P v, so now:
//   dP = dy v^T                           dv = P^T dy
// P was a row-wise softmax of S, so its vector-Jacobian product is the rowsum form (O(T^2) per
// head, no T x T Jacobian per row):
//   dS_ij = P_ij (dP_ij - sum_k dP_ik P_ik)
// Masked entries have P_ij = 0 and so dS_ij = 0: the mask needs no special case here. And S was
// s q k^T, so
//   dq = s dS k                           dk = s dS^T q
// The projections around the core are Linear's backward (linear_backward).

namespace {

// Where head h of batch b starts inside qkv (row stride 3C) and y (row stride C).
struct HeadPtrs {
  int64_t q, k, v, y;
};
HeadPtrs head_offsets(const AttentionDims& d, int64_t b, int64_t h) {
  const int64_t q = b * d.T * 3 * d.C + h * d.HS();
  return {q, q + d.C, q + 2 * d.C, b * d.T * d.C + h * d.HS()};
}

}  // namespace

template <typename T>
T attention_core_forward(T* att, T* y, const T* qkv, const AttentionDims& d) {
  const int64_t Tn = d.T, HS = d.HS(), ld = 3 * d.C;
  const T scale = T(1) / std::sqrt(static_cast<T>(HS));
  T global_max = -std::numeric_limits<T>::infinity();
  parallel_for(d.B * d.NH, Tn * Tn * HS, [&](int64_t bh0, int64_t bh1) {
    T thread_max = -std::numeric_limits<T>::infinity();
    for (int64_t bh = bh0; bh < bh1; ++bh) {
      const HeadPtrs o = head_offsets(d, bh / d.NH, bh % d.NH);
      T* P = att + bh * Tn * Tn;
      gemm<T>(Trans::kNo, Trans::kYes, Tn, Tn, HS, scale, qkv + o.q, ld, qkv + o.k, ld, T(0), P, Tn);
      for (int64_t i = 0; i < Tn; ++i) {
        T* row = P + i * Tn;
        const T mx = vmath::max(row, i + 1);
        thread_max = std::max(thread_max, mx);
        const T inv = T(1) / vmath::exp_shifted_sum(row, row, mx, i + 1);
        for (int64_t j = 0; j <= i; ++j) row[j] *= inv;
        std::fill(row + i + 1, row + Tn, T(0));
      }
      gemm<T>(Trans::kNo, Trans::kNo, Tn, HS, Tn, T(1), P, Tn, qkv + o.v, ld, T(0), y + o.y, d.C);
    }
    // max is exactly associative and commutative: the order threads arrive in cannot matter.
#pragma omp critical(tapegrad_attention_max)
    global_max = std::max(global_max, thread_max);
  });
  return global_max;
}

template <typename T>
void attention_core_backward(T* dqkv, T* scratch, const T* dy, const T* qkv, const T* att, const AttentionDims& d) {
  const int64_t Tn = d.T, HS = d.HS(), ld = 3 * d.C;
  const T scale = T(1) / std::sqrt(static_cast<T>(HS));
  parallel_for(d.B * d.NH, 2 * Tn * Tn * HS, [&](int64_t bh0, int64_t bh1) {
    T* dP = scratch + omp_get_thread_num() * Tn * Tn;
    for (int64_t bh = bh0; bh < bh1; ++bh) {
      const HeadPtrs o = head_offsets(d, bh / d.NH, bh % d.NH);
      const T* P = att + bh * Tn * Tn;
      gemm<T>(Trans::kNo, Trans::kYes, Tn, Tn, HS, T(1), dy + o.y, d.C, qkv + o.v, ld, T(0), dP, Tn);
      gemm<T>(Trans::kYes, Trans::kNo, Tn, HS, Tn, T(1), P, Tn, dy + o.y, d.C, T(0), dqkv + o.v, ld);
      for (int64_t i = 0; i < Tn; ++i) {  // dS in place of dP; zero above the diagonal
        const T* p = P + i * Tn;
        T* g = dP + i * Tn;
        const T dot = vmath::dot(g, p, i + 1);
        for (int64_t j = 0; j <= i; ++j) g[j] = p[j] * (g[j] - dot);
        std::fill(g + i + 1, g + Tn, T(0));
      }
      gemm<T>(Trans::kNo, Trans::kNo, Tn, HS, Tn, scale, dP, Tn, qkv + o.k, ld, T(0), dqkv + o.q, ld);
      gemm<T>(Trans::kYes, Trans::kNo, Tn, HS, Tn, scale, dP, Tn, qkv + o.q, ld, T(0), dqkv + o.k, ld);
    }
  });
}

template <typename T>
Var<T> causal_self_attention(Var<T> x, Var<T> w_qkv, Var<T> w_proj, Var<T> b_qkv, Var<T> b_proj, int64_t n_head,
                             T* max_logit) {
  const Shape xs = x.shape();
  check(xs.rank() == 3, "causal_self_attention: input must be (B, T, C), got ", xs);
  const AttentionDims d{xs[0], xs[1], xs[2], n_head};
  check(n_head > 0 && d.C % n_head == 0, "causal_self_attention: n_head = ", n_head, " does not divide C = ", d.C);
  check(w_qkv.shape() == Shape{3 * d.C, d.C} && w_proj.shape() == Shape{d.C, d.C},
        "causal_self_attention: weights ", w_qkv.shape(), " and ", w_proj.shape(), " must be (", 3 * d.C, ",", d.C,
        ") and (", d.C, ",", d.C, ") for input ", xs);
  const bool has_bias = b_qkv.defined();
  check(has_bias == b_proj.defined(), "causal_self_attention: give both biases or neither");
  check(!has_bias || (b_qkv.shape() == Shape{3 * d.C} && b_proj.shape() == Shape{d.C}),
        "causal_self_attention: biases must be (", 3 * d.C, ") and (", d.C, ")");

  Tape<T>& tape = x.tape();
  const OpInputs<T> inputs{x, w_qkv, w_proj, b_qkv, b_proj};
  Var<T> out = tape.make_output("causal_self_attention", xs, inputs);
  const int64_t rows = d.B * d.T;
  // The cache: qkv, the probabilities and the pre-projection output (llm.c keeps the same).
  T* qkv = tape.template scratch<T>(rows * 3 * d.C);
  T* att = tape.template scratch<T>(d.B * d.NH * d.T * d.T);
  T* y = tape.template scratch<T>(rows * d.C);
  const T* bq = has_bias ? b_qkv.data() : nullptr;
  const T* bp = has_bias ? b_proj.data() : nullptr;
  linear_forward(qkv, x.data(), w_qkv.data(), bq, rows, d.C, 3 * d.C);
  const T mx = attention_core_forward(att, y, qkv, d);
  if (max_logit) *max_logit = mx;
  linear_forward(out.data(), y, w_proj.data(), bp, rows, d.C, d.C);
  if (!out.requires_grad()) return out;

  // Backward's own buffers come from the arena now, so backward never allocates.
  T* dy = tape.template scratch<T>(rows * d.C);
  T* dqkv = tape.template scratch<T>(rows * 3 * d.C);
  T* dP = tape.template scratch<T>(num_threads() * d.T * d.T);
  tape.record("causal_self_attention", inputs, out,
              [d, rows, has_bias, xd = x.data(), wq = w_qkv.data(), wp = w_proj.data(), qkv, att, y, dy, dqkv,
               dP](const T* dout, T* const* din) {
                linear_backward(dy, din[2], has_bias ? din[4] : nullptr, dout, y, wp, rows, d.C, d.C, /*accumulate_dx=*/false);
                attention_core_backward(dqkv, dP, dy, qkv, att, d);
                linear_backward(din[0], din[1], has_bias ? din[3] : nullptr, dqkv, xd, wq, rows, d.C, 3 * d.C);
              });
  return out;
}

template <typename T>
CausalSelfAttention<T>::CausalSelfAttention(AttentionOptions o) : options_(o) {
  check(o.dim > 0 && o.n_head > 0, "CausalSelfAttention: dim and n_head must be positive, got dim=", o.dim,
        " n_head=", o.n_head);
  check(o.dim % o.n_head == 0, "CausalSelfAttention: n_head = ", o.n_head, " does not divide dim = ", o.dim);
  qkv_ = &this->add_module("qkv", std::make_unique<Linear<T>>(LinearOptions{o.dim, 3 * o.dim, o.bias}));
  proj_ = &this->add_module("proj", std::make_unique<Linear<T>>(LinearOptions{o.dim, o.dim, o.bias}));
}

template <typename T>
Var<T> CausalSelfAttention<T>::forward(Var<T> x) {
  Tape<T>& tape = x.tape();
  const bool b = options_.bias;
  return causal_self_attention(x, tape.param(qkv_->weight()), tape.param(proj_->weight()),
                               b ? tape.param(*qkv_->bias()) : Var<T>{}, b ? tape.param(*proj_->bias()) : Var<T>{},
                               options_.n_head, &max_logit_);
}

template <typename T>
std::string CausalSelfAttention<T>::options_repr() const {
  return cat("dim=", options_.dim, ", n_head=", options_.n_head, ", bias=", options_.bias ? "true" : "false");
}

template float attention_core_forward<float>(float*, float*, const float*, const AttentionDims&);
template double attention_core_forward<double>(double*, double*, const double*, const AttentionDims&);
template void attention_core_backward<float>(float*, float*, const float*, const float*, const float*,
                                             const AttentionDims&);
template void attention_core_backward<double>(double*, double*, const double*, const double*, const double*,
                                              const AttentionDims&);
template Var<float> causal_self_attention(Var<float>, Var<float>, Var<float>, Var<float>, Var<float>, int64_t, float*);
template Var<double> causal_self_attention(Var<double>, Var<double>, Var<double>, Var<double>, Var<double>, int64_t,
                                           double*);
template class CausalSelfAttention<float>;
template class CausalSelfAttention<double>;

}  // namespace tapegrad::nn
