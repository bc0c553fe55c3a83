// One copy per instruction set (tapegrad/isa.h): kW below is that ISA's register width.
#include "tapegrad/isa_kernel.h"

#include <algorithm>

#include "tapegrad/nn/attention_head_kernels.h"
#include "tapegrad/nn/causal_softmax.h"
#include "tapegrad/register_tile.h"

namespace tapegrad::nn::TAPEGRAD_ISA_NS {

namespace {

using tapegrad::TAPEGRAD_ISA_NS::kW;
using tapegrad::TAPEGRAD_ISA_NS::load;
using tapegrad::TAPEGRAD_ISA_NS::store;
using tapegrad::TAPEGRAD_ISA_NS::transpose_tile;
using tapegrad::TAPEGRAD_ISA_NS::Vec;

// kW floats a register (register_tile.h); accumulators a block may hold: half the registers.
#if defined(__AVX512F__)
constexpr int kAccVecs = 16;  // of 32
#else
constexpr int kAccVecs = 8;   // of 16 (SSE's kW = 4 is correct but slower than OpenBLAS's
                              // run-time-chosen AVX kernels, 1.3-1.5x: not used, see head_kernels_support)
#endif

// Heads are taken in multiples of 16 features (head_kernels_support), the same rule on every
// machine; NV16 of them are NV16 * kVecsPer16 vectors.
constexpr int kVecsPer16 = 16 / kW;

// Rows per block for heads of NV vectors.
template <int NV>
constexpr int rows_per_block() {
  return std::clamp(kAccVecs / NV, 1, 8);
}

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// dst (HS x Tp) = src^T for src's T rows of HS (stride ld); columns T..Tp zero. In kW x kW tiles
// held in registers (transpose_tile): a scalar copy was an eighth of a head's time (perf).
void transpose_pad(float* dst, const float* src, int64_t ld, int64_t T, int64_t HS, int64_t Tp) {
  for (int64_t j0 = 0; j0 < Tp; j0 += kW) {
    const int64_t rows = std::min<int64_t>(kW, T - j0);
    for (int64_t d0 = 0; d0 < HS; d0 += kW) {
      Vec r[kW];
#pragma GCC unroll 16
      for (int64_t j = 0; j < kW; ++j) r[j] = load(src + (j0 + std::min(j, rows - 1)) * ld + d0);
      transpose_tile(r);
      float* out = dst + d0 * Tp + j0;
      if (rows == kW) {
#pragma GCC unroll 16
        for (int64_t d = 0; d < kW; ++d) store(out + d * Tp, r[d]);
      } else {  // a last partial tile: its columns past T are the padding, zero
        for (int64_t d = 0; d < kW; ++d) {
          alignas(64) float row[kW];
          store(row, r[d]);
          std::fill(row + rows, row + kW, 0.f);
          store(out + d * Tp, load(row));
        }
      }
    }
  }
}

// C_ij = alpha sum_d A_id Bt_dj (C is T x T), for every j inside the kW-column vectors that reach
// the diagonal of row block i0 .. i0+R-1; vectors wholly above it are not computed (the causal
// softmax reads only j <= i). Rows past T are computed from row T-1 and dropped.
template <int R>
void lower_nt(float* C, int64_t T, const float* A, int64_t lda, const float* Bt, int64_t Tp, int64_t HS, float alpha) {
  for (int64_t i0 = 0; i0 < T; i0 += R) {
    const float* a[R];
    for (int r = 0; r < R; ++r) a[r] = A + std::min<int64_t>(i0 + r, T - 1) * lda;
    const int64_t jend = std::min(Tp, round_up(i0 + R, kW));
    for (int64_t j0 = 0; j0 < jend; j0 += kW) {
      Vec acc[R] = {};
      for (int64_t d = 0; d < HS; ++d) {
        const Vec b = load(Bt + d * Tp + j0);
        for (int r = 0; r < R; ++r) acc[r] += a[r][d] * b;
      }
      const int64_t n = std::min<int64_t>(kW, T - j0);
      for (int r = 0; r < R && i0 + r < T; ++r) {
        const Vec c = alpha * acc[r];
        if (n == kW) store(C + (i0 + r) * T + j0, c);
        else __builtin_memcpy(C + (i0 + r) * T + j0, &c, static_cast<size_t>(n) * sizeof(float));
      }
    }
  }
}

// Out_i = alpha sum_{j <= i} L_ij B_j (rows of NV vectors), L lower triangular (T x T, zero above
// the diagonal, which lets a row block sum to its last row's j). Rows past T: from row T-1, dropped.
template <int NV>
void lower_nn(float* Out, int64_t ldo, const float* L, int64_t T, const float* B, int64_t ldb, float alpha) {
  constexpr int R = rows_per_block<NV>();
  for (int64_t i0 = 0; i0 < T; i0 += R) {
    const float* l[R];
    for (int r = 0; r < R; ++r) l[r] = L + std::min<int64_t>(i0 + r, T - 1) * T;
    Vec acc[R][NV] = {};
    const int64_t jn = std::min(T, i0 + R);
    for (int64_t j = 0; j < jn; ++j) {
      Vec b[NV];
      for (int v = 0; v < NV; ++v) b[v] = load(B + j * ldb + v * kW);
      for (int r = 0; r < R; ++r)
        for (int v = 0; v < NV; ++v) acc[r][v] += l[r][j] * b[v];
    }
    for (int r = 0; r < R && i0 + r < T; ++r)
      for (int v = 0; v < NV; ++v) store(Out + (i0 + r) * ldo + v * kW, alpha * acc[r][v]);
  }
}

// Out_j = alpha sum_{i >= j} L_ij B_i: L^T times B, L lower triangular as above (so a column
// block sums from its first column's i). Columns past T: from column T-1, dropped.
template <int NV>
void lower_tn(float* Out, int64_t ldo, const float* L, int64_t T, const float* B, int64_t ldb, float alpha) {
  constexpr int R = rows_per_block<NV>();
  for (int64_t j0 = 0; j0 < T; j0 += R) {
    int64_t col[R];
    for (int r = 0; r < R; ++r) col[r] = std::min<int64_t>(j0 + r, T - 1);
    Vec acc[R][NV] = {};
    for (int64_t i = j0; i < T; ++i) {
      const float* l = L + i * T;
      Vec b[NV];
      for (int v = 0; v < NV; ++v) b[v] = load(B + i * ldb + v * kW);
      for (int r = 0; r < R; ++r)
        for (int v = 0; v < NV; ++v) acc[r][v] += l[col[r]] * b[v];
    }
    for (int r = 0; r < R && j0 + r < T; ++r)
      for (int v = 0; v < NV; ++v) store(Out + (j0 + r) * ldo + v * kW, alpha * acc[r][v]);
  }
}

// The row blocks of the two lower_nt products: as wide as the widest NN/TN block.
constexpr int kNtRows = rows_per_block<1>();

// Runs f.template operator()<NV>() for a head of HS = 16, 32, 48 or 64 features: NV vectors.
template <typename F>
void with_vectors(int64_t HS, F&& f) {
  switch (HS / 16) {
    case 1: f.template operator()<kVecsPer16>(); break;
    case 2: f.template operator()<2 * kVecsPer16>(); break;
    case 3: f.template operator()<3 * kVecsPer16>(); break;
    default: f.template operator()<4 * kVecsPer16>(); break;
  }
}

bool supports(int64_t HS) { return kW >= 8 && HS > 0 && HS % 16 == 0 && HS <= 64; }

int64_t forward_scratch(int64_t T, int64_t HS) { return HS * round_up(T, kW); }
int64_t backward_scratch(int64_t T, int64_t HS) { return T * T + HS * round_up(T, kW); }

float forward(float* P, float* y, int64_t ld_y, const float* q, const float* k, const float* v, int64_t ld_qkv,
                   int64_t T, int64_t HS, float s, float* scratch) {
  const int64_t Tp = round_up(T, kW);
  float* kt = scratch;
  transpose_pad(kt, k, ld_qkv, T, HS, Tp);
  lower_nt<kNtRows>(P, T, q, ld_qkv, kt, Tp, HS, s);  // S
  const float largest = causal_softmax_kernels_table.forward(P, T, T, 1);
  with_vectors(HS, [&]<int NV>() { lower_nn<NV>(y, ld_y, P, T, v, ld_qkv, 1.f); });
  return largest;
}

void backward(float* dq, float* dk, float* dv, const float* dy, int64_t ld_y, const float* q, const float* k,
                   const float* v, int64_t ld_qkv, const float* P, int64_t T, int64_t HS, float s, float* scratch) {
  const int64_t Tp = round_up(T, kW);
  float* dP = scratch;
  float* vt = scratch + T * T;
  transpose_pad(vt, v, ld_qkv, T, HS, Tp);
  lower_nt<kNtRows>(dP, T, dy, ld_y, vt, Tp, HS, 1.f);
  with_vectors(HS, [&]<int NV>() { lower_tn<NV>(dv, ld_qkv, P, T, dy, ld_y, 1.f); });
  causal_softmax_kernels_table.backward(dP, P, T, T, 1);  // dS in place of dP
  with_vectors(HS, [&]<int NV>() {
    lower_nn<NV>(dq, ld_qkv, dP, T, k, ld_qkv, s);
    lower_tn<NV>(dk, ld_qkv, dP, T, q, ld_qkv, s);
  });
}

void products(float* S, float* y, float* dP, float* dq, float* dk, float* dv, const float* q, const float* k,
                   const float* v, const float* dy, const float* P, int64_t ld, int64_t T, int64_t HS, float s,
                   float* scratch) {
  const int64_t Tp = round_up(T, kW);
  transpose_pad(scratch, k, ld, T, HS, Tp);
  lower_nt<kNtRows>(S, T, q, ld, scratch, Tp, HS, s);
  transpose_pad(scratch, v, ld, T, HS, Tp);
  lower_nt<kNtRows>(dP, T, dy, ld, scratch, Tp, HS, 1.f);
  with_vectors(HS, [&]<int NV>() {
    lower_nn<NV>(y, ld, P, T, v, ld, 1.f);
    lower_tn<NV>(dv, ld, P, T, dy, ld, 1.f);
    lower_nn<NV>(dq, ld, P, T, k, ld, s);
    lower_tn<NV>(dk, ld, P, T, q, ld, s);
  });
}

}  // namespace

extern const HeadKernels head_kernels_table{&supports, &forward_scratch, &backward_scratch, &forward, &backward, &products};

}  // namespace tapegrad::nn::TAPEGRAD_ISA_NS
