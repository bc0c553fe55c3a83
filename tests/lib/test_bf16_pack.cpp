// The AVX-512 packing of bf16 k-pairs (bf16_pack.h) against the scalar one it stands for: the same
// words for every layout the kernels read, at every edge a tile meets (rows short of the width, an
// odd k, pair counts that are not a multiple of the 16-pair blocks, a second k-block).
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "tapegrad/bf16_pack.h"
#include "tapegrad/random.h"

using namespace tapegrad;

TEST_CASE("pack_pairs_fast writes pack_pairs' words in every layout and at every tail", "[bf16]") {
#if defined(__x86_64__) && defined(__GNUC__)
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512vl")) {
    WARN("no AVX-512 here: the fast packing is not used, nor tested, on this machine");
    return;
  }
  Rng rng(5);
  const int64_t ld = 700;  // X is 700 x 700, read from (i0, k0) on: room for every case
  std::vector<float> x(static_cast<size_t>(ld * ld));
  for (float& v : x) v = static_cast<float>(rng.normal());
  x[3 * ld + 5] = -0.f, x[4 * ld + 6] = 1e-40f;  // a signed zero and a subnormal among them
  struct Layout {
    int64_t sp, sr, width;  // sp/sr as the kernels pass them
    bool rows_first;        // sp == 1: words of a row contiguous (out holds width * sr words)
  };
  // avx512_bf16: A tiles (12 rows: rows layout with a 256-word stride, or pairs layout) and B
  // panels (32 columns); AMX: A rows of pairs and B panels (32).
  const Layout layouts[] = {{1, 256, 12, true}, {12, 1, 12, false}, {32, 1, 32, false}, {1, 40, 32, true}};
  int checked = 0;
  for (const Layout& l : layouts)
    for (bool trans : {false, true})
      for (int64_t rows : {l.width, l.width - 5, int64_t{1}})
        for (auto [k0, kc] : {std::pair<int64_t, int64_t>{0, 64}, {0, 33}, {0, 1}, {512, 37}, {2, 66}}) {
          const int64_t kp = (kc + 1) / 2;
          if (l.rows_first && kp > l.sr) continue;
          const int64_t words = l.rows_first ? l.width * l.sr : kp * l.sp;
          std::vector<uint32_t> want(static_cast<size_t>(words), 0xdeadbeef), got = want;
          const detail::PackOperand X{x.data() + 7, ld, trans};  // an unaligned start
          detail::pack_pairs(want.data(), l.sp, l.sr, X, 3, rows, l.width, k0, kc, kp);
          detail::pack_pairs_fast(got.data(), l.sp, l.sr, X, 3, rows, l.width, k0, kc, kp);
          INFO("sp " << l.sp << " sr " << l.sr << " width " << l.width << (trans ? " columns" : " rows") << " of X, rows "
                     << rows << ", k0 " << k0 << ", kc " << kc);
          CHECK(got == want);
          ++checked;
        }
  CHECK(checked == 120);
#else
  WARN("not an x86-64 build: no fast packing");
#endif
}
