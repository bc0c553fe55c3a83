// The causal softmax kernels (causal_softmax.h): the float kernels against the readable reference
// and against float64, the masked tail, and the property the KV cache relies on — a row's values
// depend on its visible length alone, not on the row's width or where it sits in memory.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "tapegrad/nn/causal_softmax.h"
#include "tapegrad/random.h"

using namespace tapegrad;
using namespace tapegrad::nn;

namespace {

std::vector<float> scores(int64_t n, uint64_t seed, double sd) {
  Rng rng(seed);
  std::vector<float> s(static_cast<size_t>(n));
  for (float& v : s) v = static_cast<float>(sd * rng.normal());
  return s;
}

// Shapes that exercise whole packets, a partial last packet, a last packet staged because it would
// run past the row (width not a multiple of the packet), rows shorter than a packet, and KV-cache
// rows (first > 1).
struct Case {
  int64_t rows, width, first;
};
const Case kCases[] = {{1, 1, 1}, {5, 5, 1}, {16, 16, 1}, {17, 17, 1}, {50, 50, 1}, {64, 64, 1},
                       {100, 100, 1}, {3, 67, 65}, {1, 40, 40}, {7, 23, 17}, {130, 130, 1}};

}  // namespace

TEST_CASE("causal softmax: float kernels agree with the reference and with float64") {
  for (const Case& c : kCases) {
    INFO("rows " << c.rows << " width " << c.width << " first " << c.first);
    const int64_t n = c.rows * c.width;
    const std::vector<float> S = scores(n, 11, 3.0), dP = scores(n, 12, 1.0);
    std::vector<float> fast = S, ref = S;
    std::vector<double> exact(S.begin(), S.end());
    const float top = causal_softmax_forward(fast.data(), c.rows, c.width, c.first);
    const float top_ref = causal_softmax_forward_reference(ref.data(), c.rows, c.width, c.first);
    const double top_exact = causal_softmax_forward(exact.data(), c.rows, c.width, c.first);
    CHECK(top == top_ref);  // a max is exact in any order
    CHECK(top == static_cast<float>(top_exact));
    std::vector<float> g = dP, g_ref = dP;
    std::vector<double> g_exact(dP.begin(), dP.end());
    causal_softmax_backward(g.data(), fast.data(), c.rows, c.width, c.first);
    causal_softmax_backward_reference(g_ref.data(), ref.data(), c.rows, c.width, c.first);
    causal_softmax_backward(g_exact.data(), exact.data(), c.rows, c.width, c.first);
    double worst_p = 0, worst_ref = 0, worst_g = 0;
    for (int64_t i = 0; i < c.rows; ++i)
      for (int64_t j = 0; j < c.width; ++j) {
        const size_t k = static_cast<size_t>(i * c.width + j);
        if (j >= c.first + i) {  // past the prefix: exactly zero
          REQUIRE(fast[k] == 0.0f);
          REQUIRE(g[k] == 0.0f);
          continue;
        }
        worst_p = std::max(worst_p, std::abs(fast[k] - exact[k]));
        worst_ref = std::max(worst_ref, static_cast<double>(std::abs(fast[k] - ref[k])));
        worst_g = std::max(worst_g, std::abs(g[k] - g_exact[k]) / (1.0 + std::abs(g_exact[k])));
      }
    CHECK(worst_p < 1e-6);  // probabilities: float rounding of values <= 1
    CHECK(worst_ref < 1e-6);
    CHECK(worst_g < 1e-6);
  }
}

TEST_CASE("causal softmax: a row's values depend on its visible length alone (KV-cache rows = full rows)") {
  // The full pass's row i (width 64) and a cache step's row seeing the same i + 1 scores, in a
  // row of another width, at another offset in memory: bitwise equal, forward and backward.
  const int64_t T = 64;
  const std::vector<float> S = scores(T * T, 21, 2.0), dP = scores(T * T, 22, 1.0);
  std::vector<float> full = S, g_full = dP;
  causal_softmax_forward(full.data(), T, T, 1);
  causal_softmax_backward(g_full.data(), full.data(), T, T, 1);
  for (int64_t i : {0, 6, 15, 16, 31, 40, 63}) {
    for (int64_t width : {i + 1, i + 3, int64_t{80}}) {
      INFO("row " << i << " in a row of width " << width);
      std::vector<float> row(static_cast<size_t>(width + 5), std::numeric_limits<float>::quiet_NaN());
      std::vector<float> grow(row.size(), std::numeric_limits<float>::quiet_NaN());
      float* r = row.data() + 5;  // another offset; NaN past the visible scores must not leak in
      float* g = grow.data() + 5;
      std::copy_n(S.data() + i * T, i + 1, r);
      std::copy_n(dP.data() + i * T, i + 1, g);
      causal_softmax_forward(r, 1, width, i + 1);
      causal_softmax_backward(g, r, 1, width, i + 1);
      for (int64_t j = 0; j < width; ++j) {
        const float want = j <= i ? full[static_cast<size_t>(i * T + j)] : 0.0f;
        const float want_g = j <= i ? g_full[static_cast<size_t>(i * T + j)] : 0.0f;
        REQUIRE(std::memcmp(&r[j], &want, sizeof(float)) == 0);
        REQUIRE(std::memcmp(&g[j], &want_g, sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("causal softmax: scores of -inf and huge scores give exact probabilities") {
  // Scores 2, 9, 9, ...: e^-7 / z and 1 / z; a score far above the rest takes all the mass and
  // the -inf scores get exactly 0.
  std::vector<float> P = {2, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9};
  causal_softmax_forward(P.data(), 1, 20, 20);
  const double z = 19 + std::exp(-7.0);  // the sum of exp(S_j - 9)
  for (size_t j = 0; j < 20; ++j) CHECK(P[j] == Approx(j == 0 ? std::exp(-7.0) / z : 1.0 / z).epsilon(1e-6));
  std::vector<float> Q(18, -std::numeric_limits<float>::infinity());
  Q[3] = 1e30f;
  Q[17] = 5.0f;
  CHECK(causal_softmax_forward(Q.data(), 1, 18, 18) == 1e30f);
  for (size_t j = 0; j < 18; ++j) CHECK(Q[j] == (j == 3 ? 1.0f : 0.0f));
}

TEST_CASE("causal softmax: a prefix longer than the row is refused, naming the shape") {
  std::vector<float> P(12, 0.0f), dP(12, 0.0f);
  REQUIRE_THROWS_WITH(causal_softmax_forward(P.data(), 3, 4, 3),
                      Catch::Contains("causal_softmax_forward: 3 rows of width 4") && Catch::Contains("first + rows - 1 <= width"));
  REQUIRE_THROWS_WITH(causal_softmax_backward(dP.data(), P.data(), 1, 4, 0), Catch::Contains("first >= 1"));
  std::vector<double> Q(12, 0.0);
  REQUIRE_THROWS_WITH(causal_softmax_forward(Q.data(), 4, 3, 1), Catch::Contains("4 rows of width 3"));  // the reference path too
}
