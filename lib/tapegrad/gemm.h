// GEMM, the one place tapegrad multiplies matrices: C = alpha * op(A) * op(B) + beta * C,
// row-major, op(X) = X or X^T. Backed by OpenBLAS's cblas_?gemm.
//
// Threading (see threads.h): a large product is split into contiguous slabs of C's rows (or
// columns, when C is wide and short), one per OpenMP thread, each computed by a single-threaded
// OpenBLAS call. Every element of C is still produced by one thread with the full K loop, so the
// result does not depend on scheduling: same inputs and thread count, same bits.
#pragma once

#include <cstdint>

namespace tapegrad {

enum class Trans : bool { kNo = false, kYes = true };

template <typename T>
void gemm(Trans trans_a, Trans trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
          int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc);

// `batch` independent products with constant strides between matrices; A or B may be shared by
// passing a stride of 0. The batch is spread over the OpenMP threads.
template <typename T>
void gemm_batched(int64_t batch, Trans trans_a, Trans trans_b, int64_t M, int64_t N, int64_t K,
                  T alpha, const T* A, int64_t lda, int64_t stride_a, const T* B, int64_t ldb,
                  int64_t stride_b, T beta, T* C, int64_t ldc, int64_t stride_c);

// How GEMM uses threads. kSplit is the default (one pool, see above); kOpenBlas hands OpenBLAS
// all the threads and calls it from one thread — kept so bench/bench_gemm can compare them.
enum class GemmThreading { kSplit, kOpenBlas };
void set_gemm_threading(GemmThreading mode);
GemmThreading gemm_threading();

}  // namespace tapegrad
