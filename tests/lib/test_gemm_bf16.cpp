// bfloat16: the one rounding at its edges, and the mixed-precision GEMM on both kernel paths
// against a float64 reference of the rounded operands.
#include <catch2/catch.hpp>

#include <omp.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "tapegrad/bf16.h"
#include "tapegrad/bf16_operand_cache.h"
#include "tapegrad/gemm_bf16.h"
#include "tapegrad/isa.h"
#include "tapegrad/random.h"
#include "tapegrad/threads.h"

using namespace tapegrad;

namespace {

float from_bits(uint32_t u) { return std::bit_cast<float>(u); }

// Restores the kernels and thread count a test changed.
struct KernelsGuard {
  Bf16Kernels kernels = bf16_kernels();
  int threads = num_threads();
  ~KernelsGuard() {
    set_bf16_kernels(kernels);
    set_num_threads(threads);
  }
};

std::vector<float> normals(Rng& rng, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(rng.normal());
  return v;
}

std::vector<Bf16Kernels> runnable_kernels() {
  std::vector<Bf16Kernels> k{Bf16Kernels::kEmulated};
  if (bf16_avx512_available()) k.push_back(Bf16Kernels::kAvx512Bf16);
  else WARN("no AVX512-BF16 here: the avx512_bf16 kernels are not tested on this machine");
  if (bf16_amx_available()) k.push_back(Bf16Kernels::kAmx);
  else WARN("no AMX here: the AMX kernels are not tested on this machine");
  return k;
}

}  // namespace

TEST_CASE("to_bf16 rounds to nearest even at every edge", "[bf16]") {
  CHECK(to_bf16(1.0f) == 0x3f80);
  CHECK(to_bf16(-2.0f) == 0xc000);
  // ulp(1) in bf16 is 2^-7: halfway points go to the even neighbour, just past them up.
  CHECK(round_bf16(1.0f + 0x1p-8f) == 1.0f);                        // tie, 1.0 is even
  CHECK(round_bf16(1.0f + 0x1p-7f + 0x1p-8f) == 1.0f + 0x1p-6f);    // tie, 1 + 2^-7 is odd
  CHECK(round_bf16(1.0f + 0x1p-8f + 0x1p-20f) == 1.0f + 0x1p-7f);   // past the tie
  CHECK(round_bf16(1.0f + 0x1p-8f - 0x1p-20f) == 1.0f);             // below it
  CHECK(round_bf16(-(1.0f + 0x1p-7f + 0x1p-8f)) == -(1.0f + 0x1p-6f));
  // Overflow: the largest bf16 stays, FLT_MAX (past it by more than half an ulp) becomes Inf.
  CHECK(to_bf16(from_bits(0x7f7f0000)) == 0x7f7f);
  CHECK(to_bf16(std::numeric_limits<float>::max()) == 0x7f80);
  CHECK(to_bf16(-std::numeric_limits<float>::max()) == 0xff80);
  CHECK(to_bf16(std::numeric_limits<float>::infinity()) == 0x7f80);
  CHECK(to_bf16(-std::numeric_limits<float>::infinity()) == 0xff80);
  // NaN stays NaN (a signalling NaN's payload must not carry into Inf), quiet, with its sign.
  CHECK(std::isnan(from_bf16(to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(to_bf16(from_bits(0x7f800001)) == 0x7fc0);
  CHECK(to_bf16(from_bits(0xff800001)) == 0xffc0);
  CHECK(to_bf16(from_bits(0x7fffffff)) == 0x7fff);
  // Subnormals round like any value (no flush to zero).
  CHECK(to_bf16(from_bits(0x00010000)) == 0x0001);
  CHECK(to_bf16(from_bits(0x00008000)) == 0x0000);  // tie to even 0
  CHECK(to_bf16(from_bits(0x00018000)) == 0x0002);  // tie to even 2
  CHECK(to_bf16(from_bits(0x00008001)) == 0x0001);
  CHECK(to_bf16(from_bits(0x00000001)) == 0x0000);
  CHECK(to_bf16(-0.0f) == 0x8000);
  // The array form is the scalar one.
  const std::vector<float> x{1.0f + 0x1p-8f, from_bits(0x7f800001), from_bits(0x00018000), -3.3f};
  std::vector<float> y(x.size());
  round_bf16(x.data(), y.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) CHECK(to_bf16(y[i]) == to_bf16(x[i]));
}

// round_bf16 works on the 32-bit pattern directly; it must be the trip through 16 bits for every
// float: each of the 65,536 upper halves (every sign, exponent and kept mantissa, NaNs and Infs
// among them) with each low half that decides a rounding (zero, the smallest, just below a tie, the
// tie, just past it, the largest, and two others), by the scalar form and the vectorised array form
// of every kernel variant this CPU runs (and in place, as the modules call it).
TEST_CASE("round_bf16 is the round trip through to_bf16 for every upper half and every deciding low half", "[bf16]") {
  const std::vector<uint32_t> lows{0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff, 0x1234, 0xc000};
  std::vector<float> x;
  for (uint32_t hi = 0; hi < 0x10000u; ++hi)
    for (const uint32_t lo : lows) x.push_back(from_bits((hi << 16) | lo));
  REQUIRE(x.size() == 524288);
  const auto n = static_cast<int64_t>(x.size());
  std::vector<uint32_t> want(x.size());
  int64_t scalar_wrong = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    want[i] = std::bit_cast<uint32_t>(from_bf16(to_bf16(x[i])));
    scalar_wrong += std::bit_cast<uint32_t>(round_bf16(x[i])) != want[i];
  }
  CHECK(scalar_wrong == 0);
  const auto wrong = [&](const std::vector<float>& y) {
    int64_t w = 0;
    for (size_t i = 0; i < y.size(); ++i) w += std::bit_cast<uint32_t>(y[i]) != want[i];
    return w;
  };
  for (const Isa isa : runnable_isas()) {
    INFO("kernel variant " << isa_name(isa));
    std::vector<float> y(x.size());
    bf16_rounding(isa).round(x.data(), y.data(), n);
    CHECK(wrong(y) == 0);
    y = x;
    bf16_rounding(isa).round(y.data(), y.data(), n);
    CHECK(wrong(y) == 0);
  }
  std::vector<float> y(x.size());
  round_bf16(x.data(), y.data(), n);  // the active variant's
  CHECK(wrong(y) == 0);
}

TEST_CASE("gemm_bf16 equals a float64 product of the rounded operands on every kernel path", "[bf16][gemm]") {
  KernelsGuard guard;
  Rng rng(7);
  struct Case {
    Trans ta, tb;
    int64_t M, N, K;
    float alpha, beta;
  };
  // Tails in every dimension (12-row tiles, 32-column panels, k-pairs), two k-blocks (K > 512);
  // alpha 1 with beta 0 and 1 over full 32 x 32 blocks and partial ones (AMX keeps C in its tiles).
  const std::vector<Case> cases{{Trans::kNo, Trans::kYes, 37, 70, 33, 1.f, 0.f},
                                {Trans::kNo, Trans::kNo, 12, 32, 64, 1.f, 1.f},
                                {Trans::kYes, Trans::kNo, 25, 45, 1031, 2.f, 0.5f},
                                {Trans::kYes, Trans::kYes, 1, 1, 1, -1.f, 1.f},
                                {Trans::kNo, Trans::kYes, 64, 96, 128, 0.125f, 0.f},
                                {Trans::kNo, Trans::kNo, 70, 64, 96, 1.f, 1.f},
                                {Trans::kYes, Trans::kYes, 64, 40, 50, 1.f, 0.f}};
  for (Bf16Kernels kernels : runnable_kernels()) {
    set_bf16_kernels(kernels);
    for (const Case& c : cases) {
      INFO("kernels " << bf16_kernels_name() << ", " << (c.ta == Trans::kYes ? "A^T" : "A") << " x "
                      << (c.tb == Trans::kYes ? "B^T" : "B") << ", M=" << c.M << " N=" << c.N << " K=" << c.K);
      const int64_t lda = (c.ta == Trans::kYes ? c.M : c.K) + 3, ldb = (c.tb == Trans::kYes ? c.K : c.N) + 5,
                    ldc = c.N + 2;
      std::vector<float> A((c.ta == Trans::kYes ? c.K : c.M) * lda), B((c.tb == Trans::kYes ? c.N : c.K) * ldb),
          C(c.M * ldc);
      for (float& v : A) v = static_cast<float>(rng.normal());
      for (float& v : B) v = static_cast<float>(rng.normal());
      for (float& v : C) v = c.beta == 0.f ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(rng.normal());
      const std::vector<float> C0 = C;
      gemm_bf16(c.ta, c.tb, c.M, c.N, c.K, c.alpha, A.data(), lda, B.data(), ldb, c.beta, C.data(), ldc);
      double worst = 0;
      for (int64_t i = 0; i < c.M; ++i)
        for (int64_t j = 0; j < c.N; ++j) {
          double ref = 0, mag = 0;
          for (int64_t k = 0; k < c.K; ++k) {
            const double a = round_bf16(c.ta == Trans::kYes ? A[k * lda + i] : A[i * lda + k]);
            const double b = round_bf16(c.tb == Trans::kYes ? B[j * ldb + k] : B[k * ldb + j]);
            ref += a * b, mag += std::abs(a * b);
          }
          const double beta_c = c.beta == 0.f ? 0.0 : c.beta * static_cast<double>(C0[i * ldc + j]);
          ref = c.alpha * ref + beta_c;
          mag = std::abs(c.alpha) * mag + std::abs(beta_c);
          // float32 sums of exact products: at most ~K roundings of 2^-24 relative to the magnitude.
          worst = std::max(worst, std::abs(C[i * ldc + j] - ref) / (mag * 0x1p-24 * (c.K + 2)));
        }
      CHECK(worst <= 1.0);
      // Untouched: the padding columns of C.
      for (int64_t i = 0; i < c.M; ++i) CHECK((C[i * ldc + c.N] == C0[i * ldc + c.N] || std::isnan(C0[i * ldc + c.N])));
    }
  }
}

TEST_CASE("gemm_bf16: each fast path gives the same bits for any thread count, and agrees with the emulated one",
          "[bf16][gemm]") {
  KernelsGuard guard;
  Rng rng(11);
  const int64_t M = 768, N = 384, K = 128;
  std::vector<float> A = normals(rng, M * K), B = normals(rng, N * K);
  const auto run = [&](Bf16Kernels k, int threads) {
    set_bf16_kernels(k);
    set_num_threads(threads);
    std::vector<float> C(M * N);
    gemm_bf16(Trans::kNo, Trans::kYes, M, N, K, 1.f, A.data(), K, B.data(), K, 0.f, C.data(), N);
    return C;
  };
  const std::vector<float> emulated = run(Bf16Kernels::kEmulated, 2);
  for (Bf16Kernels k : runnable_kernels()) {
    if (k == Bf16Kernels::kEmulated) continue;
    const std::vector<float> one = run(k, 1), two = run(k, 2);
    INFO("kernels " << bf16_kernels_name());
    CHECK(one == two);
    double worst = 0;
    for (size_t i = 0; i < one.size(); ++i) worst = std::max(worst, static_cast<double>(std::abs(one[i] - emulated[i])));
    // Sums of 128 exact products of N(0,1) operands (~11 in magnitude): float32 round-off only.
    CHECK(worst < 1e-4);
  }
}

TEST_CASE("gemm_bf16: a constant B from the operand cache gives the same bits, is made once (by the workers asking "
          "at once too), and never outlives invalidate()",
          "[bf16][gemm]") {
  KernelsGuard guard;
  Rng rng(13);
  // Two k-blocks for the avx512_bf16 panels (K > 512), tails in M and N; both layouts of B.
  const int64_t M = 50, N = 70, K = 600;
  std::vector<float> A = normals(rng, M * K), B = normals(rng, N * K);
  for (Bf16Kernels k : runnable_kernels()) {
    set_bf16_kernels(k);
    INFO("kernels " << bf16_kernels_name());
    for (Trans tb : {Trans::kYes, Trans::kNo}) {
      const int64_t ldb = tb == Trans::kYes ? K : N;
      const auto product = [&](bool constant) {
        std::vector<float> C(M * N, 1.f);
        gemm_bf16(Trans::kNo, tb, M, N, K, 1.f, A.data(), K, B.data(), ldb, 1.f, C.data(), N, {.b_constant = constant});
        return C;
      };
      const std::vector<float> plain = product(false);
      Bf16OperandCache cache;
      {
        const UseBf16OperandCache use(&cache);
        CHECK(product(true) == plain);
        CHECK(product(true) == plain);
        CHECK(cache.fills() == 1);  // made by the first call, read by the second
        CHECK(product(false) == plain);
        CHECK(cache.fills() == 1);  // an operand not marked constant is never cached
        // A changed weight is seen once the owner invalidates (the start of the next step).
        B[0] += 1.f;
        const std::vector<float> moved = [&] {
          const UseBf16OperandCache none(nullptr);
          return product(false);
        }();
        REQUIRE(moved != plain);
        cache.invalidate();
        CHECK(product(true) == moved);
        CHECK(cache.fills() == 2);
        B[0] -= 1.f;
      }
      CHECK(bf16_operand_cache() == nullptr);  // the scope restored the thread's previous cache
      // Two batch workers asking at once, each making a share of the form (several chunks on every
      // path): both read the bits of the uncached product computed as a worker computes it (inside
      // a parallel region a GEMM is one call, outside it is split in slabs), and the form is made once.
      Bf16OperandCache shared;
      std::vector<float> worker[2], uncached[2];
#pragma omp parallel num_threads(2)
      {
        uncached[omp_get_thread_num()] = product(false);
        const UseBf16OperandCache use(&shared);
        worker[omp_get_thread_num()] = product(true);
      }
      CHECK(worker[0] == uncached[0]);
      CHECK(worker[1] == uncached[1]);
      CHECK(shared.fills() == 1);
    }
  }
}

TEST_CASE("bf16 operand cache: threads asking at once share the making of a form, each chunk made once",
          "[bf16][gemm]") {
  const int saved = num_threads();
  set_num_threads(2);
  // A form of 2^15 chunks (128 KB), each the float of its index: every chunk is written by exactly one
  // call, whichever thread claimed it, and the form reads whole by every asker.
  const int64_t chunks = int64_t{1} << 15, bytes = chunks * int64_t{sizeof(float)};
  const auto ask = [&](Bf16OperandCache& cache, std::vector<std::atomic<int>>& made, const Bf16OperandKey& key) {
    return static_cast<const float*>(cache.get(key, bytes, chunks, [&](void* out, int64_t c) {
      made[static_cast<size_t>(c)].fetch_add(1);
      static_cast<float*>(out)[c] = static_cast<float>(c);
    }));
  };
  const auto whole = [&](const float* f) {
    for (int64_t c = 0; c < chunks; ++c)
      if (f[c] != static_cast<float>(c)) return false;
    return true;
  };
  const float key_data = 0;
  for (const bool together : {true, false}) {
    INFO((together ? "two threads asking at once" : "one caller outside a parallel region (the pool joins in)"));
    Bf16OperandCache cache;
    std::vector<std::atomic<int>> made(chunks);
    const Bf16OperandKey key{&key_data, 1, chunks, 1, false, Bf16Form::kRounded};
    const float* seen[2] = {nullptr, nullptr};
    std::atomic<int> helpers{0};
    if (together) {
#pragma omp parallel num_threads(2)
      seen[omp_get_thread_num()] = ask(cache, made, key);
    } else {
      seen[0] = seen[1] = static_cast<const float*>(cache.get(key, bytes, chunks, [&](void* out, int64_t c) {
        if (omp_in_parallel()) helpers.fetch_add(1);
        made[static_cast<size_t>(c)].fetch_add(1);
        static_cast<float*>(out)[c] = static_cast<float>(c);
      }));
      CHECK(helpers.load() > 0);  // past 64 KB: shared with the pool's threads
    }
    int once = 0;
    for (const auto& m : made) once += m.load() == 1;
    CHECK(once == chunks);
    CHECK(cache.fills() == 1);
    REQUIRE(seen[0] == seen[1]);
    CHECK(whole(seen[0]));
    CHECK(ask(cache, made, key) == seen[0]);  // made: read, not made again
    CHECK(made[0].load() == 1);
  }
  set_num_threads(saved);
}

TEST_CASE("gemm_bf16: a weight read both ways (y = x W^T, dx = dy W) is one rounded form, two packed ones",
          "[bf16][gemm]") {
  KernelsGuard guard;
  Rng rng(23);
  const int64_t rows = 16, out = 40, in = 72;  // W is out x in
  std::vector<float> W = normals(rng, out * in), x = normals(rng, rows * in), dy = normals(rng, rows * out);
  for (Bf16Kernels k : runnable_kernels()) {
    set_bf16_kernels(k);
    INFO("kernels " << bf16_kernels_name());
    const auto both = [&](bool constant) {
      std::vector<float> y(rows * out, 0.f), dx(rows * in, 0.f);
      gemm_bf16(Trans::kNo, Trans::kYes, rows, out, in, 1.f, x.data(), in, W.data(), in, 0.f, y.data(), out,
                {.b_constant = constant});
      gemm_bf16(Trans::kNo, Trans::kNo, rows, in, out, 1.f, dy.data(), out, W.data(), in, 0.f, dx.data(), in,
                {.b_constant = constant});
      return std::make_pair(y, dx);
    };
    const auto plain = both(false);
    Bf16OperandCache cache;
    const UseBf16OperandCache use(&cache);
    CHECK(both(true) == plain);
    // Rounding keeps W's layout whichever way a GEMM reads it; the kernels' panels differ by it.
    CHECK(cache.fills() == (k == Bf16Kernels::kEmulated ? 1 : 2));
  }
}

TEST_CASE("gemm_bf16: operands rounded ahead and said so give the bits of rounding inside, on every path",
          "[bf16][gemm]") {
  KernelsGuard guard;
  Rng rng(17);
  // Strided operands (ld past the row) so the rounded operand's own leading dimension is used.
  const int64_t M = 37, N = 45, K = 70, lda = K + 3, ldb = K + 5;
  std::vector<float> A = normals(rng, M * lda), B = normals(rng, N * ldb);
  std::vector<float> Ar(A.size()), Br(B.size());
  round_bf16(A.data(), Ar.data(), static_cast<int64_t>(A.size()));
  round_bf16(B.data(), Br.data(), static_cast<int64_t>(B.size()));
  REQUIRE(Ar != A);  // the operands are not bf16 values already, so skipping the rounding would show
  for (Bf16Kernels k : runnable_kernels()) {
    set_bf16_kernels(k);
    INFO("kernels " << bf16_kernels_name());
    const auto product = [&](const std::vector<float>& a, const std::vector<float>& b, Bf16Operands ops) {
      std::vector<float> C(M * N, 0.5f);
      gemm_bf16(Trans::kNo, Trans::kYes, M, N, K, 1.f, a.data(), lda, b.data(), ldb, 1.f, C.data(), N, ops);
      return C;
    };
    const std::vector<float> inside = product(A, B, {});
    CHECK(product(Ar, B, {.a_rounded = true}) == inside);
    CHECK(product(A, Br, {.b_rounded = true}) == inside);
    CHECK(product(Ar, Br, {.a_rounded = true, .b_rounded = true}) == inside);
  }
  set_bf16_kernels(Bf16Kernels::kEmulated);
  CHECK(bf16_rounds_separately());
}

TEST_CASE("TAPEGRAD_BF16_GEMM names are parsed with the choices in the error", "[bf16]") {
  CHECK(parse_bf16_kernels("emulated", "TAPEGRAD_BF16_GEMM") == Bf16Kernels::kEmulated);
  CHECK_THROWS_WITH(parse_bf16_kernels("fast", "TAPEGRAD_BF16_GEMM"),
                    Catch::Contains("TAPEGRAD_BF16_GEMM 'fast'") && Catch::Contains("amx, avx512_bf16, emulated"));
  CHECK(parse_precision("bf16", "--precision") == Precision::kBf16);
  CHECK_THROWS_WITH(parse_precision("fp16", "--precision"), Catch::Contains("--precision 'fp16'") &&
                                                               Catch::Contains("fp32, bf16"));
}
