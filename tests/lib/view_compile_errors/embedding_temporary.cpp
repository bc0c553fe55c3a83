// Must not compile: the ids are a temporary, destroyed before backward() reads them.
#include <vector>

#include "tapegrad/ops.h"

int main() {
  using namespace tapegrad;
  Tape<double> tape;
  Parameter<double> w("w", Tensor<double>::full({8, 4}, 0.5));
  Var<double> x = embedding(tape.param(w), std::vector<int32_t>{1, 2, 3}, Shape{3});
  tape.backward(sum(x));
}
