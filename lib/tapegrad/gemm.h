// GEMM, the one place tapegrad multiplies matrices: C = alpha * op(A) * op(B) + beta * C,
// row-major, op(X) = X or X^T. Backed by OpenBLAS's cblas_?gemm, and for the float products
// libxsmm's generated kernels run faster (libxsmm_gemm.h) by those, when the build has libxsmm.
//
// Threading (see threads.h): a large product is split into contiguous slabs of C's rows (or
// columns, when C is wide and short), one per OpenMP thread, each computed by a single-threaded
// OpenBLAS call. Every element of C is still produced by one thread with the full K loop, so the
// result does not depend on scheduling: same inputs and thread count, same bits.
#pragma once

#include <cstdint>
#include <string_view>

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

// What the float GEMMs run on. kLibxsmm: libxsmm's generated kernels for the shapes they win
// (alpha 1, beta 0 or 1: the backward's dx and dW products, and the forward's x W^T from 64 rows
// on), OpenBLAS for the rest; the default when the build has libxsmm and the kernel variant (isa.h) is avx512
// (with AVX2 code libxsmm measured no faster than OpenBLAS). kOpenBlas: OpenBLAS for every product. TAPEGRAD_GEMM=libxsmm|openblas chooses at start
// (for A/B and tests); asking for libxsmm where it is unavailable is an error saying why.
enum class GemmKernels { kOpenBlas, kLibxsmm };
void set_gemm_kernels(GemmKernels kernels);
GemmKernels gemm_kernels();
// Parses "libxsmm" or "openblas"; throws naming `what` (a variable or flag), the value and the
// choices, or why libxsmm cannot run here.
GemmKernels parse_gemm_kernels(std::string_view name, std::string_view what);
// Whether kLibxsmm can be chosen here (the build links libxsmm, the variant is avx2 or avx512).
bool libxsmm_available();
// "openblas" or "openblas+libxsmm": what this process's float GEMMs run on now.
std::string_view gemm_kernels_name();

}  // namespace tapegrad
