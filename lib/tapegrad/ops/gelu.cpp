#include "tapegrad/ops/gelu.h"

#include <type_traits>

namespace tapegrad {

TAPEGRAD_ISA_DISPATCH(GeluKernels, gelu_kernels)

// The kernels, with the derivative, are gelu_kernels.cpp's (one copy per ISA).
template <typename T>
void gelu_forward(T* y, const T* x, int64_t n, bool y_bf16) {
  check(!y_bf16 || std::is_same_v<T, float>, "gelu_forward: bf16 output is float32 only");
  gelu_kernels().get<T>().forward(y, x, n, y_bf16);
}

template <typename T>
void gelu_backward(T* dx, const T* x, const T* dy, int64_t n, bool accumulate, bool dx_bf16) {
  check(!dx_bf16 || std::is_same_v<T, float>, "gelu_backward: bf16 output is float32 only");
  gelu_kernels().get<T>().backward(dx, x, dy, n, accumulate, dx_bf16);
}

template <typename T>
Var<T> gelu(Var<T> x) {
  Tape<T>& tape = x.tape();
  Var<T> y = tape.make_output("gelu", x.shape(), {x});
  const int64_t n = x.shape().numel();
  gelu_forward(y.data(), x.data(), n);
  tape.record("gelu", {x}, y, [xd = x.data(), n](const T* dy, T* const* dx) {
    gelu_backward(dx[0], xd, dy, n);
  });
  return y;
}

template void gelu_forward<float>(float*, const float*, int64_t, bool);
template void gelu_forward<double>(double*, const double*, int64_t, bool);
template void gelu_backward<float>(float*, const float*, const float*, int64_t, bool, bool);
template void gelu_backward<double>(double*, const double*, const double*, int64_t, bool, bool);
template Var<float> gelu(Var<float>);
template Var<double> gelu(Var<double>);

}  // namespace tapegrad
