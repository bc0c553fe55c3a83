// A custom op with two inputs, end to end: define it with CustomOp, prove its gradients with
// gradcheck (every variant), train with it. docs/engine.md shows this file as written, and a test
// builds it against an installed tapegrad (find_package).
//
// The op: a softmax over each row with a learned inverse temperature beta,
//   y = softmax(beta x),  x of shape (N, C), beta of shape (1).
// With s = y and g = dL/dy, the softmax's backward gives dL/dz = s (g - <s, g>) per row, and
// z = beta x, so
//   dL/dx = beta s (g - <s, g>),      dL/dbeta = sum over all rows of <x, s (g - <s, g>)>.
// The row softmax and its backward are the library's kernels (ops/softmax.h) on raw rows.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tapegrad/tapegrad.h"  // CustomOp, gradcheck, ops, AdamW

using namespace tapegrad;

template <typename T>
Var<T> temperature_softmax(Var<T> x, Var<T> beta) {
  check(x.shape().rank() == 2 && beta.shape() == Shape{1}, "temperature_softmax: x ", x.shape(),
        " must be (N, C) and beta ", beta.shape(), " must be (1)");
  CustomOp<T> op("temperature_softmax", {x, beta}, x.shape());
  const int64_t n = x.shape().numel(), rows = x.shape()[0], cols = x.shape()[1];
  const T *xv = op.input(0), *b = op.input(1);
  T *s = op.output(), *z = op.scratch(n), *dz = op.scratch(n);
  for (int64_t i = 0; i < n; ++i) z[i] = b[0] * xv[i];
  softmax_forward(s, z, rows, cols);  // s = softmax(z), z = beta x, row by row
  // dz = dL/dz = s (g - <s, g>) per row: the softmax's backward (which adds into dz, so zero it).
  // Rules capture by value ([=]): pointers into tape memory and sizes. Each fills its buffer.
  const auto grad_z = [=](const T* g) { std::fill(dz, dz + n, T(0)), softmax_backward(dz, s, g, rows, cols); };
  op.grad(0, [=](const T* g, T* dx) { grad_z(g); for (int64_t i = 0; i < n; ++i) dx[i] = b[0] * dz[i]; });
  op.grad(1, [=](const T* g, T* dbeta) { grad_z(g); for (int64_t i = 0; i < n; ++i) dbeta[0] += xv[i] * dz[i]; });
  return op.finish();
}

int main() {
  try {
    // 1. Prove the gradients: finite differences in double, with each input a constant in turn.
    Rng rng(1);
    const GradcheckResult proof = gradcheck("temperature_softmax", temperature_softmax<double>,
                                            {Tensor<double>::randn({4, 6}, rng), Tensor<double>::from({0.7}, {1})});
    std::printf("%s\n", proof.message.c_str());
    if (!proof.ok) return 1;

    // 2. Train with it: recover the temperature behind sharpened targets, softmax(3 x).
    const Tensor<float> x = Tensor<float>::randn({64, 5}, rng), three = Tensor<float>::from({3}, {1});
    Tape<float> tape;
    const auto p = Tensor<float>::copy_of(temperature_softmax(tape.constant(x.view()), tape.constant(three.view())).value());
    Parameter<float> beta("beta", Tensor<float>::from({1}, {1}));
    AdamW<float> opt({&beta}, {.weight_decay = 0});
    for (int step = 1; step <= 300; ++step) {
      tape.clear();
      Var<float> loss = mse_loss(temperature_softmax(tape.constant(x.view()), tape.param(beta)), tape.constant(p.view()));
      opt.zero_grad();
      tape.backward(loss);
      opt.step(0.05);
      if (step % 60 == 0) std::printf("step %3d  loss %.3e  beta %.4f\n", step, loss.value()[0], beta.value()[0]);
    }
    const bool learned = std::abs(beta.value()[0] - 3.0f) < 0.01f;
    std::printf("%s: beta = %.4f (target 3)\n", learned ? "OK" : "FAILED", beta.value()[0]);
    return learned ? 0 : 1;
  } catch (const std::exception& e) {  // e.g. a bad TAPEGRAD_BUFFER_OFFSET: one line, not an abort
    std::fprintf(stderr, "custom_op: error: %s\n", e.what());
    return 1;
  }
}
