// Must not compile: the targets are a temporary, destroyed before backward() reads them.
#include <vector>

#include "tapegrad/ops.h"

std::vector<int32_t> labels(int n) { return std::vector<int32_t>(static_cast<size_t>(n), 1); }

int main() {
  using namespace tapegrad;
  Tape<double> tape;
  Parameter<double> w("w", Tensor<double>::full({64, 4}, 0.5));
  Var<double> loss = cross_entropy(tape.param(w), labels(64));
  tape.backward(loss);
}
