#include "support.h"
#include "tapegrad/gemm.h"
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
