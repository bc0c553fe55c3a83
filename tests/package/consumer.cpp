// Links tapegrad::nn from an installed tree and checks one gradient.
#include <cstdio>

#include "tapegrad/gradcheck.h"
#include "tapegrad/ops.h"

int main() {
  using namespace tapegrad;
  Rng rng(1);
  auto r = gradcheck("gelu(x) @ w", [](Tape<double>&, std::span<const Var<double>> in) {
    return matmul(gelu(in[0]), in[1]);
  }, {Tensor<double>::randn({3, 4}, rng), Tensor<double>::randn({4, 2}, rng)});
  std::printf("%s\n", r.message.c_str());
  return r.ok ? 0 : 1;
}
