#include <cmath>
#include <cstring>
#include <vector>

#include "support.h"
#include "tapegrad/random.h"
#include "tapegrad/vmath.h"

using namespace tapegrad;

// The same values placed at every offset of a 64-byte line must reduce to the same bits: the
// association order may depend on n only, never on the address (the allocator moves addresses
// from run to run, and resume/determinism tests compare losses and gradient norms bitwise).
TEST_CASE("vmath: reductions are bitwise independent of the data's alignment", "[vmath]") {
  Rng rng(7);
  for (const int64_t n : {1, 7, 15, 16, 17, 65, 129, 768, 1001}) {
    std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
    for (auto& v : a) v = static_cast<float>(rng.normal());
    for (auto& v : b) v = static_cast<float>(rng.normal());
    std::vector<float> pa(static_cast<size_t>(n) + 16), pb(static_cast<size_t>(n) + 16), y(static_cast<size_t>(n) + 16);
    float sum0 = 0, dot0 = 0, dev0 = 0, exp0 = 0;
    double sq0 = 0;
    for (int offset = 0; offset < 16; ++offset) {
      float* x = pa.data() + offset;
      float* z = pb.data() + offset;
      std::memcpy(x, a.data(), sizeof(float) * static_cast<size_t>(n));
      std::memcpy(z, b.data(), sizeof(float) * static_cast<size_t>(n));
      const float s = vmath::sum(x, n), d = vmath::dot(x, z, n), dev = vmath::sum_sq_dev(x, 0.25f, n);
      const float e = vmath::exp_shifted_sum(y.data() + offset, x, 1.5f, n);
      const double sq = vmath::sum_squares(x, n);
      if (offset == 0) {
        sum0 = s, dot0 = d, dev0 = dev, exp0 = e, sq0 = sq;
        continue;
      }
      INFO("n = " << n << ", offset = " << offset << " floats");
      CHECK(s == sum0);
      CHECK(d == dot0);
      CHECK(dev == dev0);
      CHECK(e == exp0);
      CHECK(sq == sq0);
    }
    // ...and they are sums: against a long double reference, within float32 rounding.
    long double rs = 0, rd = 0, re = 0;
    for (int64_t i = 0; i < n; ++i) {
      rs += a[static_cast<size_t>(i)];
      rd += static_cast<long double>(a[static_cast<size_t>(i)]) * b[static_cast<size_t>(i)];
      re += std::exp(static_cast<long double>(a[static_cast<size_t>(i)]) - 1.5L);
    }
    INFO("n = " << n);
    CHECK(std::abs(sum0 - static_cast<double>(rs)) <= 1e-5 * n);
    CHECK(std::abs(dot0 - static_cast<double>(rd)) <= 1e-5 * n);
    CHECK(std::abs(exp0 - static_cast<double>(re)) <= 1e-6 * static_cast<double>(re) * 8);
  }
}

TEST_CASE("vmath: sum of squares accumulates in double", "[vmath]") {
  // 1e8 + n copies of 1: float accumulation would lose every 1; double keeps them.
  std::vector<float> x(1001, 1.0f);
  x[0] = 1e4f;  // 1e8 once squared
  CHECK(vmath::sum_squares(x.data(), 1001) == 1e8 + 1000.0);
  CHECK(vmath::sum_squares(x.data(), 0) == 0.0);
  CHECK(vmath::sum(x.data(), 0) == 0.0f);
}
