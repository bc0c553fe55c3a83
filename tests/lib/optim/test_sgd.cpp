#include "support.h"
#include "tapegrad/optim/sgd.h"

using namespace tapegrad;
using namespace tapegrad::testing;

TEST_CASE("sgd: momentum and L2 decay match torch.optim.SGD", "[optim]") {
  Parameter<double> w("w", Tensor<double>::full({1, 1}, 1.0));
  SGD<double> opt({&w}, {.momentum = 0.9, .weight_decay = 0.01});
  const double grads[] = {0.5, -0.25, 2.0};
  const double expect[] = {0.949, 0.927151, 0.706559749};
  for (int t = 0; t < 3; ++t) {
    w.grad()[0] = grads[t];
    opt.step(0.1);
    CHECK_THAT(w.value().view(), AllClose<double>({expect[t]}, 1e-14, 1e-13));
  }
}
