#include "tapegrad/nn/attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "tapegrad/gemm.h"
#include "tapegrad/gemm_bf16.h"
#include "tapegrad/nn/attention_head_kernels.h"
#include "tapegrad/nn/causal_softmax.h"
#include "tapegrad/nn/norm_affine.h"
#include "tapegrad/ops/to_bf16.h"
#include "tapegrad/parallel.h"

namespace tapegrad::nn {

// Backward, per (batch, head), from the forward S = q k^T s (s = 1/sqrt(HS)), P = softmax(S),
// y = P v. In the forward pass y was P v, so now:
//   dP = dy v^T                           dv = P^T dy
// P was a row-wise softmax of S, so its vector-Jacobian product is the rowsum form (O(T^2) per
// head, no T x T Jacobian per row):
//   dS_ij = P_ij (dP_ij - sum_k dP_ik P_ik)        (causal_softmax.h, with the forward's softmax)
// Masked entries have P_ij = 0 and so dS_ij = 0: the mask needs no special case here. And S was
// s q k^T, so
//   dq = s dS k                           dk = s dS^T q
// The projections around the core are Linear's backward (linear_backward).
//
// With QK-norm the core reads q^ = Norm_q(q), k^ = Norm_k(k) (per head, over HS), so the core's
// backward yields dq^ and dk^, and the norm's own backward (its row kernels, from the registry;
// derived beside each norm, e.g. layernorm.cpp) turns them into dq, dk and the norm weights'
// gradients — the chain rule, one stage after another, with each stage's tested kernel.

namespace {

// Where head h of batch b starts inside qkv (row stride 3C) and y (row stride C).
struct HeadPtrs {
  int64_t q, k, v, y;
};
HeadPtrs head_offsets(const AttentionDims& d, int64_t b, int64_t h) {
  const int64_t q = b * d.T * 3 * d.C + h * d.HS();
  return {q, q + d.C, q + 2 * d.C, b * d.T * d.C + h * d.HS()};
}

// QK-norm runs the norm kernels over q and k gathered into contiguous (B*T*NH, HS) blocks, q's
// block first, then k's: the layout those kernels take. Gathering and scattering copy 2*B*T*C
// elements, little beside the GEMMs.
template <typename T>
void gather_qk(T* qk, const T* qkv, int64_t rows, int64_t C) {
  parallel_for(rows, 4 * C, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      std::copy_n(qkv + r * 3 * C, C, qk + r * C);
      std::copy_n(qkv + r * 3 * C + C, C, qk + (rows + r) * C);
    }
  });
}
template <typename T>
void scatter_qk(T* qkv, const T* qk, int64_t rows, int64_t C) {
  parallel_for(rows, 4 * C, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      std::copy_n(qk + r * C, C, qkv + r * 3 * C);
      std::copy_n(qk + (rows + r) * C, C, qkv + r * 3 * C + C);
    }
  });
}

// What QK-norm's backward needs, kept in the tape's arena (the closure holds one pointer).
template <typename T>
struct QKNormCache {
  const NormRowKernels<T>* kernels;  // the norm's, from the registry
  int64_t n;           // rows of HS per block: B * T * NH
  const T* raw;        // (2, n, HS): q then k before the norm
  const T* q_weight;
  const T* k_weight;
  const T* stats;      // (2, stats_per_row * n): q's statistics, then k's
  T* dnormed;          // (2, n, HS): gradient w.r.t. the normalised q, k
  int din_q_weight, din_k_weight;  // positions in din[]; -1: the norm has no parameter
};

// draw: (2, n, HS), the gradient w.r.t. q, k; scratch: norm_backward_scratch(HS). Both are the
// tape's backward workspace.
template <typename T>
void qk_norm_cache_backward(const QKNormCache<T>& c, T* dqkv, T* const* din, int64_t rows, int64_t C, int64_t HS,
                            T* draw, T* scratch) {
  const int64_t block = c.n * HS, stats = c.kernels->stats_per_row * c.n;
  gather_qk(c.dnormed, dqkv, rows, C);
  std::fill_n(draw, 2 * block, T(0));
  T* const dq[1] = {c.din_q_weight >= 0 ? din[c.din_q_weight] : nullptr};
  T* const dk[1] = {c.din_k_weight >= 0 ? din[c.din_k_weight] : nullptr};
  const T* const q[1] = {c.q_weight};
  const T* const k[1] = {c.k_weight};
  c.kernels->backward(draw, dq, c.dnormed, c.raw, c.stats, q, c.n, HS, scratch);
  c.kernels->backward(draw + block, dk, c.dnormed + block, c.raw + block, c.stats + stats, k, c.n, HS, scratch);
  scatter_qk(dqkv, draw, rows, C);
}

}  // namespace

// The GEMM path: per (batch, head), the six products through tapegrad::gemm. The float path
// runs attention_head_kernels.h instead where it takes the head size; this stays the reference.
template <typename T>
T attention_core_forward_reference(T* att, T* y, const T* qkv, const AttentionDims& d) {
  const int64_t Tn = d.T, HS = d.HS(), ld = 3 * d.C;
  const T scale = T(1) / std::sqrt(static_cast<T>(HS));
  T global_max = -std::numeric_limits<T>::infinity();
  parallel_for(d.B * d.NH, Tn * Tn * HS, [&](int64_t bh0, int64_t bh1) {
    T thread_max = -std::numeric_limits<T>::infinity();
    for (int64_t bh = bh0; bh < bh1; ++bh) {
      const HeadPtrs o = head_offsets(d, bh / d.NH, bh % d.NH);
      T* P = att + bh * Tn * Tn;
      gemm<T>(Trans::kNo, Trans::kYes, Tn, Tn, HS, scale, qkv + o.q, ld, qkv + o.k, ld, T(0), P, Tn);
      thread_max = std::max(thread_max, causal_softmax_forward(P, Tn, Tn, 1));
      gemm<T>(Trans::kNo, Trans::kNo, Tn, HS, Tn, T(1), P, Tn, qkv + o.v, ld, T(0), y + o.y, d.C);
    }
    // max is exactly associative and commutative: the order threads arrive in cannot matter.
#pragma omp critical(tapegrad_attention_max)
    global_max = std::max(global_max, thread_max);
  });
  return global_max;
}

template <typename T>
void attention_core_backward_reference(T* dqkv, T* scratch, const T* dy, const T* qkv, const T* att,
                                       const AttentionDims& d) {
  const int64_t Tn = d.T, HS = d.HS(), ld = 3 * d.C;
  const T scale = T(1) / std::sqrt(static_cast<T>(HS));
  parallel_for(d.B * d.NH, 2 * Tn * Tn * HS, [&](int64_t bh0, int64_t bh1) {
    T* dP = scratch + omp_get_thread_num() * Tn * Tn;
    for (int64_t bh = bh0; bh < bh1; ++bh) {
      const HeadPtrs o = head_offsets(d, bh / d.NH, bh % d.NH);
      const T* P = att + bh * Tn * Tn;
      gemm<T>(Trans::kNo, Trans::kYes, Tn, Tn, HS, T(1), dy + o.y, d.C, qkv + o.v, ld, T(0), dP, Tn);
      gemm<T>(Trans::kYes, Trans::kNo, Tn, HS, Tn, T(1), P, Tn, dy + o.y, d.C, T(0), dqkv + o.v, ld);
      causal_softmax_backward(dP, P, Tn, Tn, 1);  // dS in place of dP; zero above the diagonal
      gemm<T>(Trans::kNo, Trans::kNo, Tn, HS, Tn, scale, dP, Tn, qkv + o.k, ld, T(0), dqkv + o.q, ld);
      gemm<T>(Trans::kYes, Trans::kNo, Tn, HS, Tn, scale, dP, Tn, qkv + o.q, ld, T(0), dqkv + o.k, ld);
    }
  });
}

template <typename T>
bool attention_uses_head_kernels(const AttentionDims& d) {
  return std::is_same_v<T, float> && head_kernels_support(d.HS());
}

template <typename T>
int64_t attention_core_scratch(const AttentionDims& d, bool backward) {
  if (!attention_uses_head_kernels<T>(d)) return backward ? num_threads() * d.T * d.T : 0;
  return num_threads() * (backward ? head_backward_scratch(d.T, d.HS()) : head_forward_scratch(d.T, d.HS()));
}

template <typename T>
T attention_core_forward(T* att, T* y, const T* qkv, const AttentionDims& d, T* scratch) {
  if constexpr (std::is_same_v<T, float>) {
    if (attention_uses_head_kernels<T>(d)) {
      const int64_t Tn = d.T, HS = d.HS(), ld = 3 * d.C, per_thread = head_forward_scratch(Tn, HS);
      const float scale = 1.f / std::sqrt(static_cast<float>(HS));
      float global_max = -std::numeric_limits<float>::infinity();
      parallel_for(d.B * d.NH, Tn * Tn * HS, [&](int64_t bh0, int64_t bh1) {
        float thread_max = -std::numeric_limits<float>::infinity();
        float* mine = scratch + omp_get_thread_num() * per_thread;
        for (int64_t bh = bh0; bh < bh1; ++bh) {
          const HeadPtrs o = head_offsets(d, bh / d.NH, bh % d.NH);
          thread_max = std::max(thread_max, head_forward(att + bh * Tn * Tn, y + o.y, d.C, qkv + o.q, qkv + o.k,
                                                         qkv + o.v, ld, Tn, HS, scale, mine));
        }
#pragma omp critical(tapegrad_attention_max)
        global_max = std::max(global_max, thread_max);
      });
      return global_max;
    }
  }
  return attention_core_forward_reference(att, y, qkv, d);
}

template <typename T>
void attention_core_backward(T* dqkv, T* scratch, const T* dy, const T* qkv, const T* att, const AttentionDims& d) {
  if constexpr (std::is_same_v<T, float>) {
    if (attention_uses_head_kernels<T>(d)) {
      const int64_t Tn = d.T, HS = d.HS(), ld = 3 * d.C, per_thread = head_backward_scratch(Tn, HS);
      const float scale = 1.f / std::sqrt(static_cast<float>(HS));
      parallel_for(d.B * d.NH, 2 * Tn * Tn * HS, [&](int64_t bh0, int64_t bh1) {
        float* mine = scratch + omp_get_thread_num() * per_thread;
        for (int64_t bh = bh0; bh < bh1; ++bh) {
          const HeadPtrs o = head_offsets(d, bh / d.NH, bh % d.NH);
          head_backward(dqkv + o.q, dqkv + o.k, dqkv + o.v, dy + o.y, d.C, qkv + o.q, qkv + o.k, qkv + o.v, ld,
                        att + bh * Tn * Tn, Tn, HS, scale, mine);
        }
      });
      return;
    }
  }
  attention_core_backward_reference(dqkv, scratch, dy, qkv, att, d);
}

namespace {

// QK-norm's forward over the q and k of `rows` rows of qkv, in place; the raw values and the
// norm's statistics stay in the tape's arena (backward reads them).
template <typename T>
struct QKNormed {
  T* raw;     // (2, rows * NH, HS): q then k before the norm
  T* normed;  // the same after it (also scattered back into qkv)
  T* stats;   // (2, stats_per_row * rows * NH)
};
template <typename T>
QKNormed<T> qk_norm_forward(Tape<T>& tape, T* qkv, int64_t rows, const AttentionDims& d, const QKNormInputs<T>& qk_norm) {
  const int64_t n = rows * d.NH, block = rows * d.C, per_block = qk_norm.kernels->stats_per_row * n;
  QKNormed<T> r{tape.template scratch<T>(2 * block), tape.template scratch<T>(2 * block),
                tape.template scratch<T>(2 * per_block)};
  const T eps = static_cast<T>(qk_norm.eps);
  const T* const q[1] = {qk_norm.q_weight.defined() ? qk_norm.q_weight.data() : nullptr};
  const T* const k[1] = {qk_norm.k_weight.defined() ? qk_norm.k_weight.data() : nullptr};
  gather_qk(r.raw, qkv, rows, d.C);
  qk_norm.kernels->forward(r.normed, r.stats, r.raw, q, n, d.HS(), eps);
  qk_norm.kernels->forward(r.normed + block, r.stats + per_block, r.raw + block, k, n, d.HS(), eps);
  scatter_qk(qkv, r.normed, rows, d.C);
  return r;
}

// The checks both attention entry points share; returns the dimensions.
template <typename T>
AttentionDims check_attention_inputs(const char* op, Var<T> x, Var<T> w_qkv, Var<T> w_proj, Var<T> b_qkv, Var<T> b_proj,
                                     int64_t heads, const QKNormInputs<T>& qk_norm) {
  const Shape xs = x.shape();
  check(xs.rank() == 3, op, ": input must be (B, T, C), got ", xs);
  const AttentionDims d{xs[0], xs[1], xs[2], heads};
  check(heads > 0 && d.C % heads == 0, op, ": heads = ", heads, " does not divide C = ", d.C);
  check(w_qkv.shape() == Shape{3 * d.C, d.C} && w_proj.shape() == Shape{d.C, d.C}, op, ": weights ", w_qkv.shape(),
        " and ", w_proj.shape(), " must be (", 3 * d.C, ",", d.C, ") and (", d.C, ",", d.C, ") for input ", xs);
  const bool has_bias = b_qkv.defined();
  check(has_bias == b_proj.defined(), op, ": give both biases or neither");
  check(!has_bias || (b_qkv.shape() == Shape{3 * d.C} && b_proj.shape() == Shape{d.C}), op, ": biases must be (",
        3 * d.C, ") and (", d.C, ")");
  const bool qk_weights = qk_norm.q_weight.defined();
  check(qk_weights == qk_norm.k_weight.defined() && (!qk_weights || qk_norm.kernels),
        op, ": QK-norm needs the norm's row kernels, and q and k weights both or neither");
  if (qk_weights) {
    const Shape want = qk_norm.kernels->param_shape(d.HS());
    check(qk_norm.q_weight.shape() == want && qk_norm.k_weight.shape() == want, op, ": QK-norm needs q and k weights of shape ",
          want, " for heads of ", d.HS(), " = C / heads, got ", qk_norm.q_weight.shape(), " and ", qk_norm.k_weight.shape());
  }
  return d;
}

}  // namespace

template <typename T>
Var<T> causal_self_attention(Var<T> x, Var<T> w_qkv, Var<T> w_proj, Var<T> b_qkv, Var<T> b_proj, int64_t heads,
                             T* max_logit, const QKNormInputs<T>& qk_norm) {
  const Shape xs = x.shape();
  const AttentionDims d = check_attention_inputs("causal_self_attention", x, w_qkv, w_proj, b_qkv, b_proj, heads, qk_norm);
  const bool has_bias = b_qkv.defined();
  const NormRowKernels<T>* qk_kernels = qk_norm.kernels;
  const bool has_qk_norm = qk_kernels != nullptr;
  const bool qk_weights = qk_norm.q_weight.defined();

  Tape<T>& tape = x.tape();
  const OpInputs<T> inputs{x, w_qkv, w_proj, b_qkv, b_proj, qk_norm.q_weight, qk_norm.k_weight};
  Var<T> out = tape.make_output("causal_self_attention", xs, inputs);
  const int64_t rows = d.B * d.T;
  // The cache: qkv, the probabilities and the pre-projection output (llm.c keeps the same).
  T* qkv = tape.template scratch<T>(rows * 3 * d.C);
  T* att = tape.template scratch<T>(d.B * d.NH * d.T * d.T);
  T* y = tape.template scratch<T>(rows * d.C);
  const T* bq = has_bias ? b_qkv.data() : nullptr;
  const T* bp = has_bias ? b_proj.data() : nullptr;
  // The projections' GEMMs at the autocast precision; the core (q k^T, p v) stays float32.
  const Precision p = autocast_state().gemm;
  // bf16 on the emulated path (gemm_bf16.h, round_ahead): x rounded once for the qkv GEMM and dW_qkv,
  // y in place for proj and dW_proj (the core's backward does not read y).
  const bool ahead = round_ahead<T>(p);
  const T* xd = ahead ? rounded_copy(tape, x.data(), rows * d.C) : x.data();
  // The weights: forward and backward's dx (qkv) or dy (proj) read each, rounded once here unless
  // the step's operand cache makes their forms (linear.h, rounded_weight).
  const bool grads = out.requires_grad();
  const WeightOperand<T> wqo = rounded_weight(tape, w_qkv.data(), 3 * d.C * d.C, ahead && grads && x.requires_grad());
  const WeightOperand<T> wpo = rounded_weight(tape, w_proj.data(), d.C * d.C, ahead && grads);
  linear_forward(qkv, xd, wqo.w, bq, rows, d.C, 3 * d.C, p, {.x = ahead, .w = wqo.rounded});
  // QK-norm: q, k are normalised in place inside qkv; the raw values stay for backward.
  QKNormCache<T>* qk_cache = nullptr;
  if (has_qk_norm) {
    const int64_t n = rows * d.NH;
    const QKNormed<T> normed_qk = qk_norm_forward(tape, qkv, rows, d, qk_norm);
    T* raw = normed_qk.raw;
    T* normed = normed_qk.normed;
    T* stats = normed_qk.stats;
    const T* const q[1] = {qk_weights ? qk_norm.q_weight.data() : nullptr};
    const T* const k[1] = {qk_weights ? qk_norm.k_weight.data() : nullptr};
    if (out.requires_grad()) {
      // din[]: x, w_qkv, w_proj, [b_qkv, b_proj], [q_weight, k_weight]
      const int q_weight_at = qk_weights ? (has_bias ? 5 : 3) : -1;
      qk_cache = tape.template scratch<QKNormCache<T>>(1);
      *qk_cache = {qk_kernels,
                   n,
                   raw,
                   q[0],
                   k[0],
                   stats,
                   normed,  // the normalised values are in qkv now; the buffer holds their gradient
                   q_weight_at,
                   qk_weights ? q_weight_at + 1 : -1};
    }
  }
  const T mx = attention_core_forward(att, y, qkv, d, tape.template scratch<T>(attention_core_scratch<T>(d, false)));
  if (max_logit) *max_logit = mx;
  if (ahead) round_ahead_into(y, y, rows * d.C);
  linear_forward(out.data(), y, wpo.w, bp, rows, d.C, d.C, p, {.x = ahead, .w = wpo.rounded});
  if (!grads) return out;

  // Backward's own buffers are the tape's workspace: every layer's backward reuses them, warm.
  tape.record("causal_self_attention", inputs, out,
              [&tape, d, rows, has_bias, xd, wqo, wpo, qkv, att, y, qk_cache, p, ahead](const T* dout, T* const* din) {
                T* dy = tape.template workspace<T>(rows * d.C);
                T* dqkv = tape.template workspace<T>(rows * 3 * d.C);
                T* core = tape.template workspace<T>(attention_core_scratch<T>(d, true));  // a tile per thread number
                // Rounded ahead (bf16, emulated path): dout once for dy, dW_proj and db_proj; dqkv
                // in place, for dx, dW_qkv and db_qkv.
                T* dout_r = nullptr;
                if (ahead) {
                  dout_r = tape.template workspace<T>(rows * d.C);
                  round_ahead_into(dout_r, dout, rows * d.C);
                }
                // The projections' gradients are written, not added, when the tape hands them over
                // unwritten (inputs 0-4; the q/k norms' weights, after them, are added to).
                const auto fresh = [&](int i) { return has_bias || i < 3 ? tape.din_fresh(i) : false; };
                linear_backward(dy, din[2], has_bias ? din[4] : nullptr, dout, y, wpo.w, rows, d.C, d.C,
                                {.dx = false, .dw = !fresh(2), .db = !fresh(4)}, p,
                                {.x = ahead, .dy = dout_r, .w = wpo.rounded});
                attention_core_backward(dqkv, core, dy, qkv, att, d);
                if (qk_cache)
                  qk_norm_cache_backward(*qk_cache, dqkv, din, rows, d.C, d.HS(), tape.template workspace<T>(2 * rows * d.C),
                                         tape.template workspace<T>(norm_backward_scratch(d.HS())));
                if (ahead) round_ahead_into(dqkv, dqkv, rows * 3 * d.C);
                linear_backward(din[0], din[1], has_bias ? din[3] : nullptr, dqkv, xd, wqo.w, rows, d.C, 3 * d.C,
                                {.dx = !fresh(0), .dw = !fresh(1), .db = !fresh(3)}, p,
                                {.x = ahead, .dy = ahead ? dqkv : nullptr, .w = wqo.rounded});
              },
              /*assigns=*/has_bias ? 0b11111u : 0b111u);
  return out;
}

template <typename T>
Var<T> cached_self_attention(Var<T> x, Var<T> w_qkv, Var<T> w_proj, Var<T> b_qkv, Var<T> b_proj, int64_t heads,
                             const AttentionCache<T>& cache, T* max_logit, const QKNormInputs<T>& qk_norm) {
  const AttentionDims d = check_attention_inputs("cached_self_attention", x, w_qkv, w_proj, b_qkv, b_proj, heads, qk_norm);
  check(d.B == 1, "cached_self_attention: one sequence at a time, got a batch of ", d.B);
  check(cache.keys && cache.values && cache.past >= 0 && cache.past + d.T <= cache.capacity, "cached_self_attention: ",
        cache.past, " cached + ", d.T, " new positions exceed the cache's ", cache.capacity);
  Tape<T>& tape = x.tape();
  const OpInputs<T> inputs{x, w_qkv, w_proj, b_qkv, b_proj, qk_norm.q_weight, qk_norm.k_weight};
  Var<T> out = tape.make_output("cached_self_attention", x.shape(), inputs);
  check(!out.requires_grad(), "cached_self_attention: inference only (run it under Tape::no_grad)");
  const int64_t n = d.T, C = d.C, HS = d.HS(), total = cache.past + n;
  T* qkv = tape.template scratch<T>(n * 3 * C);
  T* att = tape.template scratch<T>(d.NH * n * total);
  T* y = tape.template scratch<T>(n * C);
  const Precision p = autocast_state().gemm;
  linear_forward(qkv, x.data(), w_qkv.data(), b_qkv.defined() ? b_qkv.data() : nullptr, n, C, 3 * C, p);
  if (qk_norm.kernels) qk_norm_forward(tape, qkv, n, d, qk_norm);
  for (int64_t r = 0; r < n; ++r) {  // the new positions' k and v join the cache
    std::copy_n(qkv + r * 3 * C + C, C, cache.keys + (cache.past + r) * C);
    std::copy_n(qkv + r * 3 * C + 2 * C, C, cache.values + (cache.past + r) * C);
  }
  // Per head: S = q K^T / sqrt(HS) over every cached position, row i causal at past + i, then
  // y = softmax(S) V — the rows of the full pass's S and y for these positions.
  const T scale = T(1) / std::sqrt(static_cast<T>(HS));
  T global_max = -std::numeric_limits<T>::infinity();
  parallel_for(d.NH, n * total * HS, [&](int64_t h0, int64_t h1) {
    T thread_max = -std::numeric_limits<T>::infinity();
    for (int64_t h = h0; h < h1; ++h) {
      T* P = att + h * n * total;
      gemm<T>(Trans::kNo, Trans::kYes, n, total, HS, scale, qkv + h * HS, 3 * C, cache.keys + h * HS, C, T(0), P, total);
      thread_max = std::max(thread_max, causal_softmax_forward(P, n, total, cache.past + 1));
      gemm<T>(Trans::kNo, Trans::kNo, n, HS, total, T(1), P, total, cache.values + h * HS, C, T(0), y + h * HS, C);
    }
#pragma omp critical(tapegrad_cached_attention_max)
    global_max = std::max(global_max, thread_max);
  });
  if (max_logit) *max_logit = global_max;
  linear_forward(out.data(), y, w_proj.data(), b_proj.defined() ? b_proj.data() : nullptr, n, C, C, p);
  return out;
}

template <typename T>
CausalSelfAttention<T>::CausalSelfAttention(AttentionOptions o) : options_(o) {
  check(o.dim > 0 && o.heads > 0, "CausalSelfAttention: dim and heads must be positive, got dim=", o.dim,
        " heads=", o.heads);
  check(o.dim % o.heads == 0, "CausalSelfAttention: heads = ", o.heads, " does not divide dim = ", o.dim);
  qkv_ = &this->add_module("qkv", std::make_unique<Linear<T>>(LinearOptions{o.dim, 3 * o.dim, o.bias, o.init_std}));
  proj_ = &this->add_module("proj", std::make_unique<Linear<T>>(LinearOptions{o.dim, o.dim, o.bias, o.proj_init_std}));
  if (!o.qk_norm.is_none()) {
    check(o.qk_norm.entry().row_kernels<T>() != nullptr, "CausalSelfAttention: norm '", o.qk_norm.name(),
          "' has no row kernels, so it cannot be a QK-norm");
    const NormSpec spec{o.dim / o.heads, o.qk_norm_eps, /*bias=*/false};
    q_norm_ = &this->add_module("q_norm", make_norm<T>(o.qk_norm, spec));
    k_norm_ = &this->add_module("k_norm", make_norm<T>(o.qk_norm, spec));
    check(q_norm_->parameters().size() <= 1, "CausalSelfAttention: QK-norm '", o.qk_norm.name(),
          "' has ", q_norm_->parameters().size(), " parameters; at most one is supported");
  }
}

template <typename T>
Var<T> CausalSelfAttention<T>::forward(Var<T> x) {
  return forward(x, &max_logit_);
}

template <typename T>
Var<T> CausalSelfAttention<T>::forward(Var<T> x, T* max_logit) {
  Tape<T>& tape = x.tape();
  const bool b = options_.bias;
  QKNormInputs<T> qk;
  qk.eps = options_.qk_norm_eps;
  if (q_norm_) {
    qk.kernels = options_.qk_norm.entry().row_kernels<T>();
    const auto q = q_norm_->parameters(), k = k_norm_->parameters();
    if (!q.empty()) qk.q_weight = tape.param(*q[0]), qk.k_weight = tape.param(*k[0]);
  }
  const Var<T> w_qkv = tape.param(qkv_->weight()), w_proj = tape.param(proj_->weight());
  const Var<T> b_qkv = b ? tape.param(*qkv_->bias()) : Var<T>{}, b_proj = b ? tape.param(*proj_->bias()) : Var<T>{};
  if (cache_.keys) return cached_self_attention(x, w_qkv, w_proj, b_qkv, b_proj, options_.heads, cache_, max_logit, qk);
  return causal_self_attention(x, w_qkv, w_proj, b_qkv, b_proj, options_.heads, max_logit, qk);
}

template <typename T>
std::string CausalSelfAttention<T>::options_repr() const {
  return cat("dim=", options_.dim, ", heads=", options_.heads, ", bias=", options_.bias ? "true" : "false",
             options_.qk_norm.is_none() ? "" : ", qk_norm=" + to_string(options_.qk_norm));
}

#define TAPEGRAD_ATTENTION_CORE(T)                                                                            \
  template T attention_core_forward<T>(T*, T*, const T*, const AttentionDims&, T*);                          \
  template void attention_core_backward<T>(T*, T*, const T*, const T*, const T*, const AttentionDims&);      \
  template T attention_core_forward_reference<T>(T*, T*, const T*, const AttentionDims&);                    \
  template void attention_core_backward_reference<T>(T*, T*, const T*, const T*, const T*, const AttentionDims&); \
  template int64_t attention_core_scratch<T>(const AttentionDims&, bool);
TAPEGRAD_ATTENTION_CORE(float)
TAPEGRAD_ATTENTION_CORE(double)
#undef TAPEGRAD_ATTENTION_CORE
template Var<float> causal_self_attention(Var<float>, Var<float>, Var<float>, Var<float>, Var<float>, int64_t, float*,
                                          const QKNormInputs<float>&);
template Var<double> causal_self_attention(Var<double>, Var<double>, Var<double>, Var<double>, Var<double>, int64_t,
                                           double*, const QKNormInputs<double>&);
template Var<float> cached_self_attention(Var<float>, Var<float>, Var<float>, Var<float>, Var<float>, int64_t,
                                          const AttentionCache<float>&, float*, const QKNormInputs<float>&);
template Var<double> cached_self_attention(Var<double>, Var<double>, Var<double>, Var<double>, Var<double>, int64_t,
                                           const AttentionCache<double>&, double*, const QKNormInputs<double>&);
template class CausalSelfAttention<float>;
template class CausalSelfAttention<double>;

}  // namespace tapegrad::nn
