// A custom op with two inputs, end to end: define it with CustomOp, prove its gradients with
// gradcheck (every variant), train with it. docs/engine.md shows this file as written, and a test
// builds it against an installed tapegrad (find_package).
//
// The op: a softmax over each row with a learned inverse temperature beta,
//   y = softmax(beta x),  x of shape (N, C), beta of shape (1).
// With s = y and g = dL/dy, the softmax's backward gives dL/dz = s (g - <s, g>) per row, and
// z = beta x, so
//   dL/dx = beta s (g - <s, g>),      dL/dbeta = sum over all rows of <x, s (g - <s, g>)>.
#include <cmath>
#include <cstdio>

#include "tapegrad/custom_op.h"
#include "tapegrad/gradcheck.h"
#include "tapegrad/ops.h"
#include "tapegrad/optim/adamw.h"

using namespace tapegrad;

template <typename T>
Var<T> temperature_softmax(Var<T> x, Var<T> beta) {
  CustomOp<T> op("temperature_softmax", {x, beta}, x.shape());
  check(x.shape().rank() == 2 && beta.shape() == Shape{1}, "temperature_softmax: x ", x.shape(),
        " must be (N, C) and beta ", beta.shape(), " must be (1)");
  const int64_t rows = x.shape()[0], cols = x.shape()[1];
  const T *xv = op.input(0), *b = op.input(1);
  T* s = op.output();
  for (int64_t r = 0; r < rows; ++r) {  // s = softmax(beta x), stabilised by the row max
    const T* xr = xv + r * cols;
    T* sr = s + r * cols;
    T top = xr[0] * b[0], total = 0;
    for (int64_t c = 1; c < cols; ++c) top = std::max(top, xr[c] * b[0]);
    for (int64_t c = 0; c < cols; ++c) total += sr[c] = std::exp(xr[c] * b[0] - top);
    for (int64_t c = 0; c < cols; ++c) sr[c] /= total;
  }
  // dL/dz at (r, c): s (g - <s, g>) for row r.
  const auto dz = [=](const T* g, int64_t r, int64_t c) {
    T sg = 0;
    for (int64_t k = 0; k < cols; ++k) sg += s[r * cols + k] * g[r * cols + k];
    return s[r * cols + c] * (g[r * cols + c] - sg);
  };
  // Rules capture by value ([=]): pointers into tape memory and sizes. Each fills its buffer.
  op.grad(0, [=](const T* g, T* dx) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) dx[r * cols + c] = b[0] * dz(g, r, c);
  });
  op.grad(1, [=](const T* g, T* dbeta) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) dbeta[0] += xv[r * cols + c] * dz(g, r, c);
  });
  return op.finish();
}

int main() {
  try {
    // 1. Prove the gradients: finite differences in double, with each input a constant in turn.
    Rng rng(1);
    const GradcheckResult proof = gradcheck(
        "temperature_softmax",
        [](Tape<double>&, std::span<const Var<double>> in) { return temperature_softmax(in[0], in[1]); },
        {Tensor<double>::randn({4, 6}, rng), Tensor<double>::from({0.7}, {1})});
    std::printf("%s\n", proof.message.c_str());
    if (!proof.ok) return 1;

    // 2. Train with it: recover the temperature behind sharpened targets, softmax(3 x).
    const Tensor<float> x = Tensor<float>::randn({64, 5}, rng);
    Tape<float> tape;
    Var<float> target = temperature_softmax(tape.constant(x.view()), tape.constant(Tensor<float>::from({3}, {1})));
    const Tensor<float> p = Tensor<float>::copy_of(target.value());
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
