#include "nn_support.h"
#include "tapegrad/nn/dyt.h"
#include "tapegrad/nn/layernorm.h"
#include "tapegrad/nn/rmsnorm.h"
#include "tapegrad/nn/norm_affine.h"
#include "tapegrad/threads.h"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::testing;

namespace {
std::pair<double, double> mean_and_rms(TensorView<const double> v, int64_t begin, int64_t n) {
  double s = 0, ss = 0;
  for (int64_t i = begin; i < begin + n; ++i) s += v[i], ss += v[i] * v[i];
  return {s / n, std::sqrt(ss / n)};
}
}  // namespace

TEST_CASE("layernorm: the seed's numbers for x = [1, 2, 3, 4], eps = 0", "[nn][seed]") {
  LayerNorm<double> ln({.dim = 4, .eps = 0.0});
  Tape<double> tape;
  const auto x = Tensor<double>::from({1, 2, 3, 4}, {4});
  Var<double> y = ln.forward(tape.constant(x));
  // (x - 2.5) / sqrt(1.25): [-1.342, -0.447, 0.447, 1.342]
  CHECK_THAT(y.value(), AllClose<double>({-1.3416407864998738, -0.4472135954999579, 0.4472135954999579,
                                          1.3416407864998738}, 1e-15, 1e-14));
  CHECK_THAT(y.value(), AllClose<double>({-1.342, -0.447, 0.447, 1.342}, 5e-4, 0));
  const auto [mean, r] = mean_and_rms(y.value(), 0, 4);
  CHECK_THAT(mean, Catch::Matchers::WithinAbs(0.0, 1e-15));
  CHECK_THAT(r, Catch::Matchers::WithinAbs(1.0, 1e-15));
}

TEST_CASE("layernorm: output has mean 0 and RMS 1 for any input scale", "[nn]") {
  const double scale = GENERATE(0.01, 1.0, 1000.0);
  const double eps = GENERATE(0.0, 1e-5);
  LayerNorm<double> ln({.dim = 32, .eps = eps});
  Tape<double> tape;
  Tensor<double> x = randn({5, 32}, 7);
  for (int64_t i = 0; i < x.numel(); ++i) x[i] = scale * x[i] + 3 * scale;  // off-centre too
  Var<double> y = ln.forward(tape.constant(x));
  for (int r = 0; r < 5; ++r) {
    const auto [mean, rms] = mean_and_rms(y.value(), r * 32, 32);
    CHECK_THAT(mean, Catch::Matchers::WithinAbs(0.0, 1e-12));
    // RMS = sqrt(var / (var + eps)): exactly 1 without eps; with eps = 1e-5, visibly below 1 only
    // when the row's variance is comparable to eps (0.95 at scale 0.01).
    const auto [xmean, xrms] = mean_and_rms(x.view(), r * 32, 32);
    const double var = xrms * xrms - xmean * xmean;
    CHECK_THAT(rms, Catch::Matchers::WithinRel(std::sqrt(var / (var + eps)), 1e-9));
    if (eps == 0) CHECK_THAT(rms, Catch::Matchers::WithinAbs(1.0, 1e-12));
  }
}

TEST_CASE("layernorm: the two-pass variance survives a huge mean", "[nn]") {
  // E[x^2] - E[x]^2 in float would lose every digit here: mean 1e4, std 1.
  LayerNorm<float> ln({.dim = 4, .eps = 0.0});
  Tape<float> tape;
  const auto x = Tensor<float>::from({1e4f + 1, 1e4f + 2, 1e4f + 3, 1e4f + 4}, {4});
  CHECK_THAT(ln.forward(tape.constant(x)).value(), AllClose<float>({-1.342, -0.447, 0.447, 1.342}, 1e-3, 0));
}

TEST_CASE("gradcheck: layernorm", "[nn][gradcheck]") {
  const auto [affine, bias] = GENERATE(std::pair{true, true}, std::pair{true, false}, std::pair{false, false});
  const Shape xs = GENERATE(Shape{1, 3}, Shape{4, 7}, Shape{2, 3, 16}, Shape{1, 1, 1, 5});
  LayerNorm<double> ln({.dim = xs[-1], .eps = 1e-5, .elementwise_affine = affine, .bias = bias});
  CHECK(ln.parameters().size() == size_t(affine + bias));
  randomize(ln, 1, 0.5, 1.0);
  Parameter<double> x("x", randn(xs, 2));
  require_gradcheck(gradcheck_module("layernorm", ln, x, [&](Var<double> v) { return ln.forward(v); }));
}

TEST_CASE("layernorm: float32 agrees with float64", "[nn][precision]") {
  require_precisions_agree([](auto&, auto in) { return layer_norm(in[0], in[1], in[2]); },
                           {randn({6, 10, 64}, 3), randn({64}, 4), randn({64}, 5)}, 2e-6);
}

TEST_CASE("layernorm: a gain of the wrong size is named", "[nn][errors]") {
  Tape<float> tape;
  const Tensor<float> x(Shape{2, 4}), g(Shape{3}), b(Shape{3});
  REQUIRE_THROWS_WITH(layer_norm(tape.constant(x), tape.constant(g), tape.constant(b)),
                      "layer_norm: gamma (3) and beta (3) must be (4) for input (2,4)");
}

TEST_CASE("layernorm: the optimised backward agrees with the reference kernel", "[nn]") {
  const bool affine = GENERATE(true, false);
  const int threads = GENERATE(1, 2);
  set_num_threads(threads);
  const int64_t rows = 37, C = 96;
  Rng rng(3);
  const auto x = Tensor<float>::randn({rows, C}, rng), dy = Tensor<float>::randn({rows, C}, rng);
  const auto g = Tensor<float>::randn({C}, rng, 0.5, 1.0), b = Tensor<float>::randn({C}, rng);
  Tensor<float> y({rows, C}), mean({rows}), rstd({rows});
  layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), affine ? g.data() : nullptr,
                    affine ? b.data() : nullptr, rows, C, 1e-5f);
  Tensor<float> dx1({rows, C}), dx2({rows, C}), dg1({C}), dg2({C}), db1({C}), db2({C});
  std::vector<float> scratch(nn::norm_backward_scratch(C));
  layernorm_backward(dx1.data(), affine ? dg1.data() : nullptr, affine ? db1.data() : nullptr, dy.data(), x.data(),
                     mean.data(), rstd.data(), affine ? g.data() : nullptr, rows, C, scratch.data());
  layernorm_backward_reference(dx2.data(), affine ? dg2.data() : nullptr, affine ? db2.data() : nullptr, dy.data(),
                               x.data(), mean.data(), rstd.data(), affine ? g.data() : nullptr, rows, C);
  set_num_threads(0);
  CHECK_THAT(dx1.view(), AllClose<float>(to_vector<float>(dx2.view()), 1e-5, 1e-5));
  CHECK_THAT(dg1.view(), AllClose<float>(to_vector<float>(dg2.view()), 1e-4, 1e-5));
  CHECK_THAT(db1.view(), AllClose<float>(to_vector<float>(db2.view()), 1e-4, 1e-5));
}

TEST_CASE("gradcheck: the norms as ops of every input, each input in turn a constant", "[nn][gradcheck]") {
  // A functional norm (Python's tg.nn.functional, a QK-norm's gain) may see a constant gain and a
  // learned bias: each parameter's gradient must arrive whether or not the others need theirs.
  const Shape xs = GENERATE(Shape{4, 6}, Shape{2, 3, 5});
  const int64_t C = xs[-1];
  const std::vector<Tensor<double>> x_g_b{randn(xs, 1), randn({C}, 2, 0.5), randn({C}, 3)};
  require_gradcheck(gradcheck(
      "layer_norm(x, gamma, beta)",
      [](Tape<double>&, std::span<const Var<double>> in) { return layer_norm(in[0], in[1], in[2], 1e-5); }, x_g_b));
  require_gradcheck(gradcheck(
      "rms_norm(x, weight)", [](Tape<double>&, std::span<const Var<double>> in) { return rms_norm(in[0], in[1], 1e-5); },
      {x_g_b[0], x_g_b[1]}));
  require_gradcheck(gradcheck(
      "dyt(x, alpha, gamma, beta)",
      [](Tape<double>&, std::span<const Var<double>> in) { return dyt(in[0], in[1], in[2], in[3]); },
      {x_g_b[0], Tensor<double>::full({1}, 0.7), x_g_b[1], x_g_b[2]}));
}
