#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "support.h"
#include "tapegrad/blas_kernels.h"
#include "tapegrad/gemm.h"
#include "tapegrad/threads.h"

using namespace tapegrad;
using namespace tapegrad::testing;

namespace {
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}
}  // namespace

TEST_CASE("blas kernels: a pre-AVX2 fallback is replaced by the best set the CPU runs", "[blas]") {
  const CpuVectorFeatures none{}, avx2{.avx2_fma = true}, avx512{.avx2_fma = true, .avx512 = true};
  CHECK(better_blas_core("Prescott", avx512) == "SkylakeX");  // bookworm's OpenBLAS on Emerald Rapids
  CHECK(better_blas_core("Prescott", avx2) == "Haswell");
  CHECK(better_blas_core("Sandybridge", avx2) == "Haswell");
  CHECK(better_blas_core("Nehalem", avx512) == "SkylakeX");
  CHECK_FALSE(better_blas_core("Prescott", none));  // an old CPU keeps its old kernels
  // A set OpenBLAS knows to fit is never second-guessed, even if a larger one exists.
  for (const char* right : {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids"}) {
    CHECK_FALSE(better_blas_core(right, avx512));
  }
}

TEST_CASE("blas kernels: GEMMs on this machine run kernels that use its vector units", "[blas]") {
  set_num_threads(1);
  const BlasKernels& k = configure_blas_kernels();
  INFO("OpenBLAS chose " << k.detected << " at load, runs " << k.core);
  if (const char* user = std::getenv("OPENBLAS_CORETYPE")) {
    CHECK(lower(k.core) == lower(user));  // the user's choice, untouched
    CHECK_FALSE(k.reselected);
  } else {
    // Would have caught the 3x slower GEMMs of OpenBLAS 0.3.21 on CPUs it does not know.
    CHECK_FALSE(better_blas_core(k.core, cpu_vector_features()));
  }
  set_num_threads(0);
}

TEST_CASE("blas kernels: float GEMM agrees with a double product on the kernels in use", "[blas]") {
  // The float path is the one whose kernels are re-selected; sizes cross the kernels' blocking.
  const int threads = GENERATE(1, 2);
  set_num_threads(threads);
  const int M = 197, N = 131, K = 259;
  Rng rng(11);
  std::vector<float> A(M * K), B(K * N), C(M * N, 0.0f);
  for (auto& v : A) v = static_cast<float>(rng.normal());
  for (auto& v : B) v = static_cast<float>(rng.normal());
  gemm<float>(Trans::kNo, Trans::kYes, M, N, K, 1.0f, A.data(), K, B.data(), K, 0.0f, C.data(), N);
  set_num_threads(0);
  double worst = 0;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double s = 0, norm = 0;
      for (int k = 0; k < K; ++k) {
        s += double(A[m * K + k]) * B[n * K + k];
        norm += std::abs(double(A[m * K + k]) * B[n * K + k]);
      }
      worst = std::max(worst, std::abs(C[m * N + n] - s) / norm);
    }
  // float32 accumulation over K = 259 terms: error relative to sum |a_k b_k| stays near 1e-7.
  CHECK(worst < 1e-6);
}
