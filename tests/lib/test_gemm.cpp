#include "support.h"
#include "tapegrad/gemm.h"
#include "tapegrad/isa.h"
#include "tapegrad/libxsmm_gemm.h"
#include "tapegrad/random.h"
#include "tapegrad/threads.h"

using namespace tapegrad;
using namespace tapegrad::testing;

namespace {
// Naive reference: C = alpha op(A) op(B) + beta C.
std::vector<double> reference(Trans ta, Trans tb, int M, int N, int K, double alpha, const std::vector<double>& A,
                              const std::vector<double>& B, double beta, std::vector<double> C) {
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double s = 0;
      for (int k = 0; k < K; ++k) {
        const double a = ta == Trans::kYes ? A[k * M + m] : A[m * K + k];
        const double b = tb == Trans::kYes ? B[n * K + k] : B[k * N + n];
        s += a * b;
      }
      C[m * N + n] = alpha * s + beta * C[m * N + n];
    }
  return C;
}
}  // namespace

TEST_CASE("gemm: agrees with a naive product for every transpose, split or not", "[gemm]") {
  const Trans ta = GENERATE(Trans::kNo, Trans::kYes);
  const Trans tb = GENERATE(Trans::kNo, Trans::kYes);
  const auto [M, N, K] = GENERATE(std::tuple{3, 5, 2}, std::tuple{130, 70, 65}, std::tuple{20, 300, 90});
  const int threads = GENERATE(1, 2);
  set_num_threads(threads);
  Rng rng(5);
  std::vector<double> A(M * K), B(K * N), C(M * N);
  for (auto& v : A) v = rng.normal();
  for (auto& v : B) v = rng.normal();
  for (auto& v : C) v = rng.normal();
  const auto expect = reference(ta, tb, M, N, K, 0.5, A, B, 2.0, C);
  gemm<double>(ta, tb, M, N, K, 0.5, A.data(), ta == Trans::kYes ? M : K, B.data(), tb == Trans::kYes ? K : N, 2.0,
               C.data(), N);
  set_num_threads(0);
  const Tensor<double> got = Tensor<double>::from(std::span<const double>(C), {M, N});
  REQUIRE_THAT(got.view(), AllClose<double>(expect, 1e-11, 1e-11));
}

// libxsmm's generated kernels take the products with an untransposed B, and with a transposed B
// from 64 rows on, copied transposed a panel at a time (libxsmm_gemm.h). On a build with libxsmm and a CPU with
// AVX2 they must engage (a silent fall-back to OpenBLAS would hide a broken path), and agree with
// float64 for every operand layout they accept: op(A) = A or A^T, op(B) = B or B^T, beta 0 or 1,
// leading dimensions wider than the matrices, odd sizes, the step's sizes, and a shape cut into
// B panels with edges both ways (300 columns = 256 + 44, K 1100 = 2 x 512 + 76).
TEST_CASE("gemm: libxsmm's kernels agree with a float64 product on every shape they take", "[gemm]") {
  if (!libxsmm_available()) {
    REQUIRE((!detail::libxsmm_compiled() || active_isa() == Isa::baseline));
    REQUIRE_THROWS_WITH(set_gemm_kernels(GemmKernels::kLibxsmm), Catch::Contains("unavailable here"));
    return;
  }
  const Trans ta = GENERATE(Trans::kNo, Trans::kYes), tb = GENERATE(Trans::kNo, Trans::kYes);
  const float beta = GENERATE(0.f, 1.f);
  const auto [M, N, K] = GENERATE(std::tuple{3, 5, 2}, std::tuple{130, 70, 65}, std::tuple{384, 128, 512},
                                  std::tuple{128, 384, 2048}, std::tuple{70, 300, 1100});
  if (tb == Trans::kYes && M < 64) return;  // declined: the copy of B^T would not pay (checked below)
  const int pad = 3;  // every leading dimension wider than its matrix
  const int rows_a = ta == Trans::kYes ? K : M, cols_a = ta == Trans::kYes ? M : K;
  const int rows_b = tb == Trans::kYes ? N : K, cols_b = tb == Trans::kYes ? K : N;
  const int lda = cols_a + pad, ldb = cols_b + pad, ldc = N + pad;
  Rng rng(11);
  std::vector<float> A(static_cast<size_t>(rows_a * lda)), B(static_cast<size_t>(rows_b * ldb)),
      C(static_cast<size_t>(M * ldc));
  for (auto& v : A) v = static_cast<float>(rng.normal());
  for (auto& v : B) v = static_cast<float>(rng.normal());
  for (auto& v : C) v = static_cast<float>(rng.normal());
  std::vector<double> expect(static_cast<size_t>(M * N));
  double scale = 0;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double s = 0;
      for (int k = 0; k < K; ++k)
        s += double(ta == Trans::kYes ? A[k * lda + m] : A[m * lda + k]) *
             double(tb == Trans::kYes ? B[n * ldb + k] : B[k * ldb + n]);
      expect[m * N + n] = s + beta * C[m * ldc + n];
      scale = std::max(scale, std::abs(expect[m * N + n]));
    }
  const std::vector<float> before = C, b_before = B;
  REQUIRE(detail::libxsmm_sgemm(ta, tb, M, N, K, 1.f, A.data(), lda, B.data(), ldb, beta, C.data(), ldc));
  double err = 0;
  for (int m = 0; m < M; ++m) {
    for (int n = 0; n < N; ++n) err = std::max(err, std::abs(C[m * ldc + n] - expect[m * N + n]));
    for (int n = N; n < ldc; ++n) REQUIRE(C[m * ldc + n] == before[m * ldc + n]);  // the padding is left alone
  }
  REQUIRE(err / scale < 1e-5);
  REQUIRE(B == b_before);  // B^T is a copy: the operand itself is untouched
}

TEST_CASE("gemm: libxsmm declines what it does not run faster, and OpenBLAS takes it", "[gemm]") {
  CHECK(detail::libxsmm_takes(Trans::kNo, 1, 1, 2048, 1.f, 0.f));
  CHECK(detail::libxsmm_takes(Trans::kNo, 1, 1, 1, 1.f, 1.f));
  CHECK(detail::libxsmm_takes(Trans::kYes, 64, 512, 128, 1.f, 0.f));         // x W^T, B^T copied first
  CHECK_FALSE(detail::libxsmm_takes(Trans::kYes, 63, 512, 128, 1.f, 0.f));   // too few rows to pay for the copy
  CHECK(detail::libxsmm_takes(Trans::kYes, 64, 4096, 8192, 1.f, 0.f));       // B^T transposed a panel at a time
  CHECK(detail::libxsmm_takes(Trans::kNo, 64, 64, 8192, 1.f, 0.f));          // K in panels: any length
  CHECK_FALSE(detail::libxsmm_takes(Trans::kNo, 64, 64, 0, 1.f, 0.f));
  CHECK_FALSE(detail::libxsmm_takes(Trans::kNo, 0, 64, 64, 1.f, 0.f));
  CHECK_FALSE(detail::libxsmm_takes(Trans::kNo, 64, 0, 64, 1.f, 0.f));
  CHECK_FALSE(detail::libxsmm_takes(Trans::kNo, 64, 64, 64, 0.5f, 0.f));
  CHECK_FALSE(detail::libxsmm_takes(Trans::kNo, 64, 64, 64, 1.f, 2.f));
  std::vector<float> A(6, 1.f), B(6, 1.f), C(4, 0.f);
  REQUIRE_FALSE(detail::libxsmm_sgemm(Trans::kNo, Trans::kYes, 2, 2, 3, 1.f, A.data(), 3, B.data(), 3, 0.f, C.data(), 2));
  REQUIRE(C == std::vector<float>(4, 0.f));
  // Through gemm(), either path gives the product.
  const GemmKernels kept = gemm_kernels();
  for (const GemmKernels k : {GemmKernels::kOpenBlas, libxsmm_available() ? GemmKernels::kLibxsmm : GemmKernels::kOpenBlas}) {
    set_gemm_kernels(k);
    std::fill(C.begin(), C.end(), 0.f);
    gemm<float>(Trans::kNo, Trans::kNo, 2, 2, 3, 1.f, A.data(), 3, B.data(), 2, 0.f, C.data(), 2);
    CHECK(C == std::vector<float>(4, 3.f));
  }
  set_gemm_kernels(kept);
}

TEST_CASE("gemm: TAPEGRAD_GEMM's values, and an error naming it for any other", "[gemm]") {
  CHECK(parse_gemm_kernels("openblas", "TAPEGRAD_GEMM") == GemmKernels::kOpenBlas);
  REQUIRE_THROWS_WITH(parse_gemm_kernels("mkl", "TAPEGRAD_GEMM"),
                      "TAPEGRAD_GEMM 'mkl': unknown GEMM kernels; known: libxsmm, openblas");
  if (libxsmm_available()) CHECK(parse_gemm_kernels("libxsmm", "TAPEGRAD_GEMM") == GemmKernels::kLibxsmm);
  else REQUIRE_THROWS_WITH(parse_gemm_kernels("libxsmm", "TAPEGRAD_GEMM"), Catch::StartsWith("TAPEGRAD_GEMM 'libxsmm': unavailable here: "));
  CHECK(gemm_kernels_name() == (gemm_kernels() == GemmKernels::kLibxsmm ? "openblas+libxsmm" : "openblas"));
}
