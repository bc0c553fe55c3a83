// SwiGLU's kernels, a = silu(g) u over rows of [g | u] and its backward (derived in mlp.cpp), one
// copy per instruction set (tapegrad/isa.h).
#include "tapegrad/isa_kernel.h"

#include <algorithm>

#include "tapegrad/nn/mlp.h"
#include "tapegrad/parallel.h"
#include "tapegrad/vmath.h"

namespace tapegrad::nn::TAPEGRAD_ISA_NS {

namespace {

// The sigmoid of each row's gate runs as one vectorised call (vmath.h) into a per-row stack
// buffer, in pieces of kBlock.
constexpr int64_t kBlock = 256;

template <typename T>
void forward(T* a, const T* h, int64_t rows, int64_t H) {
  parallel_for(rows, 20 * H, [&](int64_t r0, int64_t r1) {
    T s[kBlock];
    for (int64_t r = r0; r < r1; ++r) {
      const T* g = h + r * 2 * H;
      const T* u = g + H;
      T* ar = a + r * H;
      for (int64_t b = 0; b < H; b += kBlock) {
        const int64_t m = std::min(kBlock, H - b);
        vmath::sigmoid(s, g + b, m);
        for (int64_t i = 0; i < m; ++i) ar[b + i] = g[b + i] * s[i] * u[b + i];  // vectorized
      }
    }
  });
}

template <typename T>
void backward(T* dh, const T* h, const T* da, int64_t rows, int64_t H, bool accumulate) {
  parallel_for(rows, 24 * H, [&](int64_t r0, int64_t r1) {
    T s[kBlock];
    for (int64_t r = r0; r < r1; ++r) {
      const T* g = h + r * 2 * H;
      const T* u = g + H;
      const T* dar = da + r * H;
      T* dg = dh + r * 2 * H;
      T* du = dg + H;
      for (int64_t b = 0; b < H; b += kBlock) {
        const int64_t m = std::min(kBlock, H - b);
        vmath::sigmoid(s, g + b, m);
        for (int64_t i = 0; i < m; ++i) {  // vectorized
          const int64_t j = b + i;
          const T dup = dar[j] * g[j] * s[i];
          const T dgp = dar[j] * u[j] * s[i] * (T(1) + g[j] * (T(1) - s[i]));
          du[j] = accumulate ? du[j] + dup : dup;
          dg[j] = accumulate ? dg[j] + dgp : dgp;
        }
      }
    }
  });
}

}  // namespace

extern const SwigluKernels swiglu_kernels_table{{&forward<float>, &backward<float>},
                                                {&forward<double>, &backward<double>}};

}  // namespace tapegrad::nn::TAPEGRAD_ISA_NS
