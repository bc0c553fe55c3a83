#include "nn_support.h"
#include "tapegrad/nn/block.h"  // rms()
#include "tapegrad/nn/norm_affine.h"
#include "tapegrad/nn/rmsnorm.h"
#include "tapegrad/threads.h"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::testing;

TEST_CASE("rmsnorm: the seed's numbers for x = [1, 2, 3, 4], eps = 0", "[nn][seed]") {
  RMSNorm<double> norm({.dim = 4, .eps = 0.0});
  Tape<double> tape;
  const auto x = Tensor<double>::from({1, 2, 3, 4}, {4});
  Var<double> y = norm.forward(tape.constant(x));
  // RMS(x) = sqrt(7.5) = 2.739; y = x / 2.739 = [0.365, 0.730, 1.095, 1.461]
  const double r = std::sqrt(7.5);
  CHECK_THAT(r, Catch::Matchers::WithinAbs(2.739, 5e-4));
  CHECK_THAT(y.value(), AllClose<double>({1 / r, 2 / r, 3 / r, 4 / r}, 1e-15, 1e-14));
  CHECK_THAT(y.value(), AllClose<double>({0.365, 0.730, 1.095, 1.461}, 5e-4, 0));
  const double mean = (y.value()[0] + y.value()[1] + y.value()[2] + y.value()[3]) / 4;
  CHECK_THAT(mean, Catch::Matchers::WithinAbs(0.913, 5e-4));  // not centred
  CHECK_THAT(rms<double>(y.value()), Catch::Matchers::WithinAbs(1.0, 1e-15));
}

TEST_CASE("rmsnorm: eps sits inside the square root, as torch.nn.RMSNorm", "[nn]") {
  RMSNorm<double> norm({.dim = 2, .eps = 0.5});
  Tape<double> tape;
  const auto x = Tensor<double>::from({1, 1}, {2});
  // 1 / sqrt(mean(x^2) + eps) = 1 / sqrt(1.5), not 1 / (1 + 0.5)
  CHECK_THAT(norm.forward(tape.constant(x)).value(), AllClose<double>({1 / std::sqrt(1.5), 1 / std::sqrt(1.5)}));
}

TEST_CASE("rmsnorm: output RMS is 1 for any scale, and coordinate ratios are kept", "[nn]") {
  const double scale = GENERATE(0.01, 1.0, 1000.0);
  const double eps = GENERATE(0.0, 1e-5);
  RMSNorm<double> norm({.dim = 16, .eps = eps});
  Tape<double> tape;
  Tensor<double> x = randn({3, 16}, 9);
  for (int64_t i = 0; i < x.numel(); ++i) x[i] *= scale;
  Var<double> y = norm.forward(tape.constant(x));
  for (int r = 0; r < 3; ++r) {
    const TensorView<const double> row(y.data() + r * 16, {16});
    const double ms = std::pow(rms<double>(TensorView<const double>(x.data() + r * 16, {16})), 2);
    CHECK_THAT(rms<double>(row), Catch::Matchers::WithinRel(std::sqrt(ms / (ms + eps)), 1e-12));
    if (eps == 0) CHECK_THAT(rms<double>(row), Catch::Matchers::WithinAbs(1.0, 1e-12));
    for (int c = 1; c < 16; ++c)
      CHECK_THAT(row[c] / row[0], Catch::Matchers::WithinRel(x.at(r, c) / x.at(r, 0), 1e-12));
  }
}

TEST_CASE("gradcheck: rmsnorm", "[nn][gradcheck]") {
  const bool affine = GENERATE(true, false);
  const Shape xs = GENERATE(Shape{1, 3}, Shape{4, 7}, Shape{2, 3, 16}, Shape{1, 1, 1, 5});
  RMSNorm<double> norm({.dim = xs[-1], .eps = 1e-5, .elementwise_affine = affine});
  randomize(norm, 1, 0.5, 1.0);
  Parameter<double> x("x", randn(xs, 2));
  require_gradcheck(gradcheck_module("rmsnorm", norm, x, [&](Var<double> v) { return norm.forward(v); }));
}

TEST_CASE("rmsnorm: float32 agrees with float64", "[nn][precision]") {
  require_precisions_agree([](auto&, auto in) { return rms_norm(in[0], in[1]); },
                           {randn({6, 10, 64}, 3), randn({64}, 4)}, 2e-6);
}

TEST_CASE("rmsnorm: the optimised backward agrees with the reference kernel", "[nn]") {
  const bool affine = GENERATE(true, false);
  const int threads = GENERATE(1, 2);
  set_num_threads(threads);
  const int64_t rows = 37, C = 96;
  Rng rng(4);
  const auto x = Tensor<float>::randn({rows, C}, rng), dy = Tensor<float>::randn({rows, C}, rng);
  const auto w = Tensor<float>::randn({C}, rng, 0.5, 1.0);
  Tensor<float> y({rows, C}), rinv({rows});
  rmsnorm_forward(y.data(), rinv.data(), x.data(), affine ? w.data() : nullptr, rows, C, 1e-5f);
  Tensor<float> dx1({rows, C}), dx2({rows, C}), dw1({C}), dw2({C});
  std::vector<float> scratch(nn::norm_backward_scratch(C));
  rmsnorm_backward(dx1.data(), affine ? dw1.data() : nullptr, dy.data(), x.data(), rinv.data(),
                   affine ? w.data() : nullptr, rows, C, scratch.data());
  rmsnorm_backward_reference(dx2.data(), affine ? dw2.data() : nullptr, dy.data(), x.data(), rinv.data(),
                             affine ? w.data() : nullptr, rows, C);
  set_num_threads(0);
  CHECK_THAT(dx1.view(), AllClose<float>(to_vector<float>(dx2.view()), 1e-5, 1e-5));
  CHECK_THAT(dw1.view(), AllClose<float>(to_vector<float>(dw2.view()), 1e-4, 1e-5));
}
