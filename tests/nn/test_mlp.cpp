#include "nn_support.h"
#include "tapegrad/nn/mlp.h"
#include "tapegrad/ops.h"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::testing;

TEST_CASE("mlp: fused GELU and SwiGLU equal their compositions of primitive ops", "[nn]") {
  const MlpKind kind = GENERATE(MlpKind::kGelu, MlpKind::kSwiGLU);
  const int64_t C = 6, H = 10;
  MLP<double> m({.dim = C, .hidden = H, .kind = kind});
  randomize(m, 1);
  auto& wf = m.parameter("fc.weight").value;
  auto& bf = m.parameter("fc.bias").value;
  Parameter<double> wp("wp", m.parameter("proj.weight").value), bp("bp", m.parameter("proj.bias").value);
  const Tensor<double> x = randn({2, 3, C}, 2);

  Tape<double> tape;
  Var<double> fused = m.forward(tape.constant(x));
  auto lin = [&](Var<double> in, Parameter<double>& w, Parameter<double>& b) {
    return add(matmul(in, tape.param(w), Trans::kNo, Trans::kYes), tape.param(b));
  };
  Var<double> composed;
  Parameter<double> w1("w1", rows_of(wf, 0, H)), b1("b1", rows_of(bf, 0, H));
  if (kind == MlpKind::kGelu) {
    composed = lin(gelu(lin(tape.constant(x), w1, b1)), wp, bp);
  } else {
    Parameter<double> w3("w3", rows_of(wf, H, H)), b3("b3", rows_of(bf, H, H));
    composed = lin(mul(silu(lin(tape.constant(x), w1, b1)), lin(tape.constant(x), w3, b3)), wp, bp);
  }
  CHECK_THAT(fused.value(), AllClose<double>(to_vector<double>(composed.value()), 1e-13, 1e-12));
}

TEST_CASE("mlp: default hidden sizes", "[nn]") {
  CHECK(default_mlp_hidden(128, MlpKind::kGelu) == 512);
  CHECK(default_mlp_hidden(128, MlpKind::kSwiGLU) == 344);  // 8/3 * 128 = 341.3, up to a multiple of 8
  CHECK(MLP<float>({.dim = 128, .kind = MlpKind::kSwiGLU}).num_parameters() == 3 * 128 * 344 + 2 * 344 + 128);
}

TEST_CASE("gradcheck: mlp gelu", "[nn][gradcheck]") {
  const bool bias = GENERATE(true, false);
  const Shape xs = GENERATE(Shape{1, 1, 3}, Shape{2, 3, 5});
  MLP<double> m({.dim = xs[-1], .hidden = 7, .kind = MlpKind::kGelu, .bias = bias});
  randomize(m, 3);
  Parameter<double> x("x", randn(xs, 4));
  require_gradcheck(gradcheck_module("mlp gelu", m, x, [&](Var<double> v) { return m.forward(v); }));
}

TEST_CASE("gradcheck: mlp swiglu", "[nn][gradcheck]") {
  const bool bias = GENERATE(true, false);
  const Shape xs = GENERATE(Shape{1, 1, 3}, Shape{2, 3, 5});
  MLP<double> m({.dim = xs[-1], .hidden = 7, .kind = MlpKind::kSwiGLU, .bias = bias});
  randomize(m, 5);
  Parameter<double> x("x", randn(xs, 6));
  require_gradcheck(gradcheck_module("mlp swiglu", m, x, [&](Var<double> v) { return m.forward(v); }));
}

TEST_CASE("mlp: float32 agrees with float64", "[nn][precision]") {
  const MlpKind kind = GENERATE(MlpKind::kGelu, MlpKind::kSwiGLU);
  const int64_t width = kind == MlpKind::kGelu ? 64 : 128;
  require_precisions_agree([&](auto&, auto in) { return mlp(in[0], in[1], in[2], in[3], in[4], kind); },
                           {randn({4, 8, 32}, 1), randn({width, 32}, 2, 0.2), randn({32, 64}, 3, 0.2),
                            randn({width}, 4), randn({32}, 5)},
                           1e-5);
}
