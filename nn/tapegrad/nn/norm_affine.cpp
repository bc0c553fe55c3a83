#include "tapegrad/nn/norm_affine.h"

#include "tapegrad/parallel.h"

namespace tapegrad::nn {

template <typename T>
void norm_affine_backward(T* dgamma, T* dbeta, const T* dy, const T* x, const T* shift, const T* scale,
                          int64_t rows, int64_t C) {
  parallel_for(C, 3 * rows, [&](int64_t c0, int64_t c1) {
    for (int64_t r = 0; r < rows; ++r) {
      const T* dyr = dy + r * C;
      const T* xr = x + r * C;
      const T mu = shift ? shift[r] : T(0), s = scale[r];
      for (int64_t c = c0; c < c1; ++c) dgamma[c] += dyr[c] * (xr[c] - mu) * s;
      if (dbeta)
        for (int64_t c = c0; c < c1; ++c) dbeta[c] += dyr[c];
    }
  });
}

template void norm_affine_backward<float>(float*, float*, const float*, const float*, const float*, const float*,
                                          int64_t, int64_t);
template void norm_affine_backward<double>(double*, double*, const double*, const double*, const double*,
                                           const double*, int64_t, int64_t);

}  // namespace tapegrad::nn
