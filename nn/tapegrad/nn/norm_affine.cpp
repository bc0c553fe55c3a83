#include "tapegrad/nn/norm_affine.h"

#include "tapegrad/threads.h"

namespace tapegrad::nn {

int64_t norm_backward_scratch(int64_t C) { return static_cast<int64_t>(num_threads()) * 4 * C; }

template <typename T>
void reduce_norm_partials(T* dgamma, T* dbeta, const T* scratch, int64_t C) {
  for (int t = 0; t < num_threads(); ++t) {
    const T* part = scratch + static_cast<int64_t>(t) * 4 * C;
    if (dgamma)
      for (int64_t c = 0; c < C; ++c) dgamma[c] += part[c];
    if (dbeta)
      for (int64_t c = 0; c < C; ++c) dbeta[c] += part[C + c];
  }
}

template void reduce_norm_partials<float>(float*, float*, const float*, int64_t);
template void reduce_norm_partials<double>(double*, double*, const double*, int64_t);

}  // namespace tapegrad::nn
