#include "tapegrad/ops/matmul.h"

#include "tapegrad/gemm_bf16.h"
#include "tapegrad/ops/to_bf16.h"

namespace tapegrad {

// Derivation. For one matrix product C = op(A) op(B), C_mn = sum_k op(A)_mk op(B)_kn, so
//   d op(A) = dC op(B)^T        d op(B) = op(A)^T dC
// and undoing the op on each side:
//   A not transposed:  dA = dC op(B)^T          (M x K)
//   A transposed:      dA = (dC op(B)^T)^T = op(B) dC^T
//   B not transposed:  dB = op(A)^T dC          (K x N)
//   B transposed:      dB = (op(A)^T dC)^T = dC^T op(A)
// Each is one GEMM with beta = 1, which is the += the tape asks for. A matrix shared across the
// batch receives the sum of its per-entry gradients.

namespace {

Trans flip(Trans t) { return t == Trans::kYes ? Trans::kNo : Trans::kYes; }

// Everything backward needs about the product: sizes, storage strides, how the batch is laid out.
struct MatmulDims {
  int64_t batch, M, N, K;
  int64_t lda, ldb;              // row strides of A and B as stored
  int64_t stride_a, stride_b;    // elements between batch entries; 0 = shared matrix
  Trans ta, tb;
  Precision p;                   // the operands' precision (autocast, precision.h)
};

// Which operands hold bf16 values already (rounded ahead by matmul, below): the GEMMs multiply
// those as they are (gemm_bf16.h, Bf16Operands). All false outside the emulated bf16 path.
struct MatmulRounded {
  bool a = false, b = false, dc = false;
};

Bf16Operands operands(bool first, bool second) { return {.a_rounded = first, .b_rounded = second}; }

template <typename T>
void matmul_forward(T* c, const T* a, const T* b, const MatmulDims& d, MatmulRounded r) {
  gemm_batched_at<T>(d.p, d.batch, d.ta, d.tb, d.M, d.N, d.K, T(1), a, d.lda, d.stride_a, b, d.ldb, d.stride_b,
                     T(0), c, d.N, d.M * d.N, operands(r.a, r.b));
}

template <typename T>
void matmul_backward(T* da, T* db, const T* a, const T* b, const T* dc, const MatmulDims& d, MatmulRounded r) {
  const int64_t stride_c = d.M * d.N;
  if (da != nullptr) {
    if (d.stride_a == 0) {  // shared A: sum over the batch, one entry after another
      for (int64_t i = 0; i < d.batch; ++i) {
        const T* bi = b + i * d.stride_b;
        const T* dci = dc + i * stride_c;
        if (d.ta == Trans::kNo)
          gemm_at<T>(d.p, Trans::kNo, flip(d.tb), d.M, d.K, d.N, T(1), dci, d.N, bi, d.ldb, T(1), da, d.lda,
                     operands(r.dc, r.b));
        else
          gemm_at<T>(d.p, d.tb, Trans::kYes, d.K, d.M, d.N, T(1), bi, d.ldb, dci, d.N, T(1), da, d.lda,
                     operands(r.b, r.dc));
      }
    } else if (d.ta == Trans::kNo) {
      gemm_batched_at<T>(d.p, d.batch, Trans::kNo, flip(d.tb), d.M, d.K, d.N, T(1), dc, d.N, stride_c, b, d.ldb,
                         d.stride_b, T(1), da, d.lda, d.stride_a, operands(r.dc, r.b));
    } else {
      gemm_batched_at<T>(d.p, d.batch, d.tb, Trans::kYes, d.K, d.M, d.N, T(1), b, d.ldb, d.stride_b, dc, d.N,
                         stride_c, T(1), da, d.lda, d.stride_a, operands(r.b, r.dc));
    }
  }
  if (db != nullptr) {
    if (d.stride_b == 0) {  // shared B
      for (int64_t i = 0; i < d.batch; ++i) {
        const T* ai = a + i * d.stride_a;
        const T* dci = dc + i * stride_c;
        if (d.tb == Trans::kNo)
          gemm_at<T>(d.p, flip(d.ta), Trans::kNo, d.K, d.N, d.M, T(1), ai, d.lda, dci, d.N, T(1), db, d.ldb,
                     operands(r.a, r.dc));
        else
          gemm_at<T>(d.p, Trans::kYes, d.ta, d.N, d.K, d.M, T(1), dci, d.N, ai, d.lda, T(1), db, d.ldb,
                     operands(r.dc, r.a));
      }
    } else if (d.tb == Trans::kNo) {
      gemm_batched_at<T>(d.p, d.batch, flip(d.ta), Trans::kNo, d.K, d.N, d.M, T(1), a, d.lda, d.stride_a, dc, d.N,
                         stride_c, T(1), db, d.ldb, d.stride_b, operands(r.a, r.dc));
    } else {
      gemm_batched_at<T>(d.p, d.batch, Trans::kYes, d.ta, d.N, d.K, d.M, T(1), dc, d.N, stride_c, a, d.lda,
                         d.stride_a, T(1), db, d.ldb, d.stride_b, operands(r.dc, r.a));
    }
  }
}

// (rows, cols) of op(X) for the last two dims of `s`.
std::pair<int64_t, int64_t> op_dims(const Shape& s, Trans t) {
  const int64_t r = s[-2], c = s[-1];
  return t == Trans::kYes ? std::pair{c, r} : std::pair{r, c};
}

}  // namespace

template <typename T>
Var<T> matmul(Var<T> a, Var<T> b, Trans ta, Trans tb) {
  const Shape sa = a.shape();
  const Shape sb = b.shape();
  // Formats the message only on failure: this runs on every step, and must not allocate.
  const auto fail = [&](const auto&... why) {
    throw Error(cat("matmul: ", sa, ta == Trans::kYes ? "^T" : "", " x ", sb, tb == Trans::kYes ? "^T" : "",
                    ": ", why...));
  };
  if (sa.rank() < 2 || sb.rank() < 2) fail("both operands need at least 2 dims");
  if (&a.tape() != &b.tape()) fail("operands are on different tapes");
  const auto [M, K] = op_dims(sa, ta);
  const auto [Kb, N] = op_dims(sb, tb);
  if (K != Kb) fail("inner dims ", K, " != ", Kb);

  MatmulDims d{};
  d.M = M, d.N = N, d.K = K, d.ta = ta, d.tb = tb, d.p = autocast_state().gemm;
  d.lda = sa[-1], d.ldb = sb[-1];
  Shape out;
  if (sb.rank() == 2 && ta == Trans::kNo) {
    // B shared: stack A's batch into rows. One GEMM, and dB is one GEMM over all rows.
    d.batch = 1;
    d.M = sa.rows();  // sa[-1] is K (A not transposed); a K of 0 has rows all the same
    d.stride_a = d.stride_b = 0;
    out = sa;
    out[-1] = N;
  } else {
    const Shape batch_a = Shape::from_range(sa.begin(), sa.end() - 2);
    const Shape batch_b = Shape::from_range(sb.begin(), sb.end() - 2);
    if (batch_a != batch_b && batch_a.rank() != 0 && batch_b.rank() != 0)
      fail("batch dims ", batch_a, " and ", batch_b, " differ");
    const Shape& batch = batch_a.rank() ? batch_a : batch_b;
    d.batch = batch.numel();
    d.stride_a = batch_a.rank() ? sa[-1] * sa[-2] : 0;
    d.stride_b = batch_b.rank() ? sb[-1] * sb[-2] : 0;
    out = batch;
    out.push_back(M);
    out.push_back(N);
  }

  Tape<T>& tape = a.tape();
  Var<T> c = tape.make_output("matmul", out, {a, b});
  // bf16 on the emulated path: an operand two GEMMs read is rounded once, here — a by the forward
  // and dB, b by the forward and dA, dc by dA and dB — and each GEMM told so (the same bits as
  // rounding at every GEMM: rounding is idempotent). A tape value's storage is its numel values
  // contiguous, so the rounded copy keeps every stride.
  const bool ahead = round_ahead<T>(d.p) && c.requires_grad();
  const MatmulRounded r{.a = ahead && b.requires_grad(), .b = ahead && a.requires_grad(),
                        .dc = ahead && a.requires_grad() && b.requires_grad()};
  const T* ad = r.a ? rounded_copy(tape, a.data(), sa.numel()) : a.data();
  const T* bd = r.b ? rounded_copy(tape, b.data(), sb.numel()) : b.data();
  matmul_forward(c.data(), ad, bd, d, r);
  tape.record("matmul", {a, b}, c, [&tape, ad, bd, d, r, n = out.numel()](const T* dc, T* const* din) {
    if (r.dc) {
      T* dcr = tape.template workspace<T>(n);
      round_ahead_into(dcr, dc, n);
      dc = dcr;
    }
    matmul_backward(din[0], din[1], ad, bd, dc, d, r);
  });
  return c;
}

template Var<float> matmul(Var<float>, Var<float>, Trans, Trans);
template Var<double> matmul(Var<double>, Var<double>, Trans, Trans);

}  // namespace tapegrad
