#include "tapegrad/ops/to_bf16.h"

#include "tapegrad/bf16.h"
#include "tapegrad/gemm_bf16.h"
#include "tapegrad/parallel.h"

namespace tapegrad {

template <typename T>
Var<T> to_bf16(Var<T> x) {
  if constexpr (!std::is_same_v<T, float>) {
    return x;
  } else {
    Tape<float>& tape = x.tape();
    Var<float> y = tape.make_output("to_bf16", x.shape(), {x});
    const int64_t n = x.shape().numel();
    const float* xd = x.data();
    float* yd = y.data();
    parallel_for(n, 1, [&](int64_t b, int64_t e) { round_bf16(xd + b, yd + b, e - b); });
    tape.record("to_bf16", {x}, y, [n](const float* dy, float* const* dx) {
      parallel_for(n, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) dx[0][i] += round_bf16(dy[i]);
      });
    });
    return y;
  }
}

template <typename T>
const T* rounded_copy(Tape<T>& tape, const T* x, int64_t n) {
  T* copy = tape.template scratch<T>(n);
  round_ahead_into(copy, x, n);
  return copy;
}

template Var<float> to_bf16(Var<float>);
template Var<double> to_bf16(Var<double>);
template const float* rounded_copy(Tape<float>&, const float*, int64_t);
template const double* rounded_copy(Tape<double>&, const double*, int64_t);

}  // namespace tapegrad
