#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "support.h"
#include "tapegrad/buffer.h"
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

// Element-wise kernels too: a dynamic-size Eigen expression peels to the first aligned address
// and computes the peeled elements with scalar libm (1-3 of 67 exp values changed bits with the
// offset before vmath blocked by index). Each kernel's output, the max and exp_shifted_sum's
// values must be the same bits at every offset of a line, for lengths around the block size.
TEST_CASE("vmath: element-wise kernels are bitwise independent of the data's alignment", "[vmath]") {
  Rng rng(11);
  using Kernel = void (*)(float*, const float*, int64_t);
  const std::pair<const char*, Kernel> kernels[] = {
      {"exp", vmath::exp<float>}, {"tanh", vmath::tanh<float>}, {"sigmoid", vmath::sigmoid<float>}};
  for (const int64_t n : {1, 5, 15, 16, 17, 31, 33, 67, 129, 1001}) {
    std::vector<float> a(static_cast<size_t>(n));
    for (auto& v : a) v = static_cast<float>(3 * rng.normal());
    std::vector<float, BufferAllocator<float>> px(static_cast<size_t>(n) + 16), py(static_cast<size_t>(n) + 16);
    std::vector<std::vector<float>> first(4);
    float max0 = 0, sum0 = 0;
    for (int offset = 0; offset < 16; ++offset) {
      INFO("n = " << n << ", offset = " << offset << " floats");
      float* x = px.data() + offset;
      float* y = py.data() + offset;
      std::memcpy(x, a.data(), sizeof(float) * static_cast<size_t>(n));
      for (size_t k = 0; k <= std::size(kernels); ++k) {
        float s = 0;
        if (k < std::size(kernels))
          kernels[k].second(y, x, n);
        else
          s = vmath::exp_shifted_sum(y, x, 0.5f, n);
        std::vector<float> out(y, y + n);
        if (offset == 0) {
          first[k] = out;
          if (k == std::size(kernels)) sum0 = s;
          continue;
        }
        INFO((k < std::size(kernels) ? kernels[k].first : "exp_shifted_sum"));
        CHECK(std::memcmp(out.data(), first[k].data(), sizeof(float) * out.size()) == 0);
        if (k == std::size(kernels)) CHECK(s == sum0);
      }
      const float m = vmath::max(x, n);
      if (offset == 0) max0 = m;
      CHECK(m == max0);
    }
    // ...and they are the functions: against double, within a few float ulp.
    INFO("n = " << n);
    for (size_t i = 0; i < a.size(); ++i) {
      const double e = std::exp(static_cast<double>(a[i])), t = std::tanh(static_cast<double>(a[i]));
      CHECK(std::abs(first[0][i] - e) <= 4e-7 * e);
      CHECK(std::abs(first[1][i] - t) <= 4e-7 * std::abs(t) + 1e-30);
      CHECK(std::abs(first[2][i] - 1 / (1 + 1 / e)) <= 4e-7 / (1 + 1 / e));
    }
    CHECK(max0 == *std::max_element(a.begin(), a.end()));
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
