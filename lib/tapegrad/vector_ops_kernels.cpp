// vector_ops.h's kernels, one copy per instruction set (tapegrad/isa.h).
#include "tapegrad/isa_kernel.h"

#include <algorithm>
#include <type_traits>

#include "tapegrad/bf16.h"
#include "tapegrad/register_tile.h"
#include "tapegrad/vector_ops.h"

namespace tapegrad::TAPEGRAD_ISA_NS {

namespace {

// Bytes in one vector register of this variant: the column sums keep four registers of running
// sums while they walk down the rows, so each row's block is loaded once and the sums are stored
// once at the end, instead of a load and a store of dst per row.
constexpr int64_t kVectorBytes = kW * static_cast<int64_t>(sizeof(float));

template <typename T>
void add_into(T* dst, const T* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] += src[i];  // vectorized
}

// The running sums start from dst[c], so each column is dst[c] + src[0, c] + src[1, c] + ...
// in that order, as the plain loop over rows would add them. Rounded: each src value is read as
// round_bf16 of it (float; bf16.h), the sums still float32.
template <bool Rounded, typename T>
T term(T v) {
  if constexpr (Rounded && std::is_same_v<T, float>) return round_bf16(v);
  return v;
}

template <bool Rounded, typename T, int64_t kBlock>
void column_block(T* dst, const T* src, int64_t rows, int64_t ld) {
  T acc[kBlock];
  for (int64_t j = 0; j < kBlock; ++j) acc[j] = dst[j];
  for (int64_t r = 0; r < rows; ++r) {
    const T* s = src + r * ld;
    for (int64_t j = 0; j < kBlock; ++j) acc[j] += term<Rounded>(s[j]);  // vectorized, in registers
  }
  for (int64_t j = 0; j < kBlock; ++j) dst[j] = acc[j];
}

template <typename T, bool Rounded = false>
void column_sums_into(T* dst, const T* src, int64_t rows, int64_t cols, int64_t ld) {
  constexpr int64_t kBlock = 4 * kVectorBytes / static_cast<int64_t>(sizeof(T));
  constexpr int64_t kVector = kVectorBytes / static_cast<int64_t>(sizeof(T));
  int64_t c = 0;
  for (; c + kBlock <= cols; c += kBlock) column_block<Rounded, T, kBlock>(dst + c, src + c, rows, ld);
  for (; c + kVector <= cols; c += kVector) column_block<Rounded, T, kVector>(dst + c, src + c, rows, ld);
  for (; c < cols; ++c) column_block<Rounded, T, 1>(dst + c, src + c, rows, ld);
}

template <typename T>
void add_rows(T* out, const T* big, const T* small, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    T* o = out + r * cols;
    const T* b = big + r * cols;
    for (int64_t c = 0; c < cols; ++c) o[c] = b[c] + small[c];  // vectorized
  }
}

template <typename T>
void scale(T* x, T factor, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= factor;  // vectorized
}

// Scalar, in 16 x 16 blocks so both sides of a block stay in L1: the edges of a float transpose,
// and every double one.
template <typename T>
void transpose_scalar(T* dst, int64_t ld_dst, const T* src, int64_t ld_src, int64_t r0, int64_t r1, int64_t c0,
                      int64_t c1) {
  constexpr int64_t kBlock = 16;
  for (int64_t rb = r0; rb < r1; rb += kBlock)
    for (int64_t cb = c0; cb < c1; cb += kBlock)
      for (int64_t r = rb; r < std::min(rb + kBlock, r1); ++r)
        for (int64_t c = cb; c < std::min(cb + kBlock, c1); ++c) dst[c * ld_dst + r] = src[r * ld_src + c];
}

template <typename T>
void transpose(T* dst, int64_t ld_dst, const T* src, int64_t ld_src, int64_t rows, int64_t cols) {
  if constexpr (std::is_same_v<T, float>) {
    // kW x kW tiles through registers (register_tile.h): a vector load per source row and a
    // vector store per destination row, where a scalar loop moves one element at a time.
    const int64_t full_rows = rows / kW * kW, full_cols = cols / kW * kW;
    for (int64_t r0 = 0; r0 < full_rows; r0 += kW)
      for (int64_t c0 = 0; c0 < full_cols; c0 += kW) {
        Vec t[kW];
#pragma GCC unroll 16
        for (int64_t i = 0; i < kW; ++i) t[i] = load(src + (r0 + i) * ld_src + c0);
        transpose_tile(t);
#pragma GCC unroll 16
        for (int64_t i = 0; i < kW; ++i) store(dst + (c0 + i) * ld_dst + r0, t[i]);
      }
    transpose_scalar(dst, ld_dst, src, ld_src, 0, full_rows, full_cols, cols);
    transpose_scalar(dst, ld_dst, src, ld_src, full_rows, rows, 0, cols);
  } else {
    transpose_scalar(dst, ld_dst, src, ld_src, 0, rows, 0, cols);
  }
}

template <typename T>
constexpr VectorOpFns<T> fns{&add_into<T>, &column_sums_into<T>, &column_sums_into<T, true>, &add_rows<T>, &scale<T>,
                             &transpose<T>};

}  // namespace

extern const VectorOpKernels vector_ops_table{fns<float>, fns<double>};

}  // namespace tapegrad::TAPEGRAD_ISA_NS
