// vector_ops.h's kernels, one copy per instruction set (tapegrad/isa.h).
#include "tapegrad/isa_kernel.h"

#include <algorithm>

#include "tapegrad/vector_ops.h"

namespace tapegrad::TAPEGRAD_ISA_NS {

namespace {

// Bytes in one vector register of this variant: the column sums keep four registers of running
// sums while they walk down the rows, so each row's block is loaded once and the sums are stored
// once at the end, instead of a load and a store of dst per row.
#if defined(__AVX512F__)
constexpr int64_t kVectorBytes = 64;
#elif defined(__AVX__)
constexpr int64_t kVectorBytes = 32;
#else
constexpr int64_t kVectorBytes = 16;
#endif

template <typename T>
void add_into(T* dst, const T* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] += src[i];  // vectorized
}

// The running sums start from dst[c], so each column is dst[c] + src[0, c] + src[1, c] + ...
// in that order, as the plain loop over rows would add them.
template <typename T, int64_t kBlock>
void column_block(T* dst, const T* src, int64_t rows, int64_t ld) {
  T acc[kBlock];
  for (int64_t j = 0; j < kBlock; ++j) acc[j] = dst[j];
  for (int64_t r = 0; r < rows; ++r) {
    const T* s = src + r * ld;
    for (int64_t j = 0; j < kBlock; ++j) acc[j] += s[j];  // vectorized, in registers
  }
  for (int64_t j = 0; j < kBlock; ++j) dst[j] = acc[j];
}

template <typename T>
void column_sums_into(T* dst, const T* src, int64_t rows, int64_t cols, int64_t ld) {
  constexpr int64_t kBlock = 4 * kVectorBytes / static_cast<int64_t>(sizeof(T));
  constexpr int64_t kVector = kVectorBytes / static_cast<int64_t>(sizeof(T));
  int64_t c = 0;
  for (; c + kBlock <= cols; c += kBlock) column_block<T, kBlock>(dst + c, src + c, rows, ld);
  for (; c + kVector <= cols; c += kVector) column_block<T, kVector>(dst + c, src + c, rows, ld);
  for (; c < cols; ++c) column_block<T, 1>(dst + c, src + c, rows, ld);
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

template <typename T>
constexpr VectorOpFns<T> fns{&add_into<T>, &column_sums_into<T>, &add_rows<T>, &scale<T>};

}  // namespace

extern const VectorOpKernels vector_ops_table{fns<float>, fns<double>};

}  // namespace tapegrad::TAPEGRAD_ISA_NS
