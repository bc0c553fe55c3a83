// The cross-entropy's row kernels, one copy per instruction set (tapegrad/isa.h); cross_entropy.cpp
// runs the active one's and accumulates the loss terms. The math is in cross_entropy.cpp.
#include "tapegrad/isa_kernel.h"

#include <cmath>

#include "tapegrad/ops/cross_entropy.h"
#include "tapegrad/parallel.h"
#include "tapegrad/vmath.h"

namespace tapegrad::TAPEGRAD_ISA_NS {

namespace {

// Rows of V <= kMaxStackV use a stack buffer for the vectorised exp(); wider vocabularies a
// scalar loop.
constexpr int64_t kMaxStackV = 4096;

// lse_i = max_j z_ij + log sum_j exp(z_ij - max_j z_ij), stable for any logits.
template <typename T>
void logsumexp_rows(T* lse, const T* logits, int64_t N, int64_t V) {
  parallel_for(N, 3 * V, [&](int64_t r0, int64_t r1) {
    T buf[kMaxStackV];
    for (int64_t i = r0; i < r1; ++i) {
      const T* z = logits + i * V;
      const T mx = vmath::max(z, V);
      T total = 0;
      if (V <= kMaxStackV) {
        total = vmath::exp_shifted_sum(buf, z, mx, V);
      } else {
        for (int64_t j = 0; j < V; ++j) total += std::exp(z[j] - mx);
      }
      lse[i] = mx + std::log(total);
    }
  });
}

// dz_ij += scale ((1 + 2 c lse_i) exp(z_ij - lse_i) - [j == t_i])
template <typename T>
void backward(T* dlogits, const T* logits, const T* lse, const int32_t* targets, int64_t N, int64_t V, T scale,
              T z_loss) {
  parallel_for(N, 3 * V, [&](int64_t r0, int64_t r1) {
    T buf[kMaxStackV];
    for (int64_t i = r0; i < r1; ++i) {
      const T* z = logits + i * V;
      T* dz = dlogits + i * V;
      const T row = scale * (T(1) + T(2) * z_loss * lse[i]);  // = scale without a z-loss
      if (V <= kMaxStackV) {
        vmath::exp_shifted_sum(buf, z, lse[i], V);
        for (int64_t j = 0; j < V; ++j) dz[j] += row * buf[j];  // vectorized
      } else {
        for (int64_t j = 0; j < V; ++j) dz[j] += row * std::exp(z[j] - lse[i]);
      }
      dz[targets[i]] -= scale;
    }
  });
}

}  // namespace

extern const CrossEntropyKernels cross_entropy_kernels_table{{&logsumexp_rows<float>, &backward<float>},
                                                             {&logsumexp_rows<double>, &backward<double>}};

}  // namespace tapegrad::TAPEGRAD_ISA_NS
