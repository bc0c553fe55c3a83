#include "tapegrad/ops/mse_loss.h"

namespace tapegrad {

// L = (1/n) sum_i r_i^2 with r = prediction - target  =>  d prediction_i = (2/n) r_i dL,
// d target_i = -(2/n) r_i dL. The sum runs in index order with a double accumulator.

template <typename T>
Var<T> mse_loss(Var<T> prediction, Var<T> target) {
  check(&prediction.tape() == &target.tape(), "mse_loss: prediction and target are on different tapes");
  check(prediction.shape() == target.shape(), "mse_loss: prediction ", prediction.shape(), " and target ",
        target.shape(), " must have the same shape");
  const int64_t n = prediction.shape().numel();
  check(n > 0, "mse_loss: empty tensors ", prediction.shape());
  Tape<T>& tape = prediction.tape();
  Var<T> loss = tape.make_output("mse_loss", Shape{}, {prediction, target});
  const T *p = prediction.data(), *t = target.data();
  double acc = 0;
  for (int64_t i = 0; i < n; ++i) acc += (static_cast<double>(p[i]) - t[i]) * (static_cast<double>(p[i]) - t[i]);
  loss.data()[0] = static_cast<T>(acc / static_cast<double>(n));
  tape.record("mse_loss", {prediction, target}, loss, [p, t, n](const T* dl, T* const* din) {
    const T c = static_cast<T>(2.0 / static_cast<double>(n)) * dl[0];
    for (int side = 0; side < 2; ++side) {
      if (din[side] == nullptr) continue;
      const T sign = side == 0 ? T(1) : T(-1);
      for (int64_t i = 0; i < n; ++i) din[side][i] += sign * c * (p[i] - t[i]);
    }
  });
  return loss;
}

template Var<float> mse_loss(Var<float>, Var<float>);
template Var<double> mse_loss(Var<double>, Var<double>);

}  // namespace tapegrad
