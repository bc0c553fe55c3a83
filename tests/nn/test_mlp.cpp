#include "nn_support.h"
#include "tapegrad/nn/mlp.h"
#include "tapegrad/ops.h"
#include "tapegrad/threads.h"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::testing;

TEST_CASE("mlp: fused GELU and SwiGLU equal their compositions of primitive ops, value and gradient", "[nn]") {
  const MlpActivation kind = GENERATE(MlpActivation::kGelu, MlpActivation::kSwiGLU);
  // The second size has enough rows for the fused node to cut them into one slab per thread
  // (its row-local region), so offsets into every buffer are exercised.
  const auto [B, Tn, C, H] = GENERATE(std::tuple{2, 3, 6, 10}, std::tuple{4, 20, 16, 48});
  const int threads = GENERATE(1, 2);
  INFO(to_string(kind) << " B" << B << " T" << Tn << " C" << C << " H" << H << ", " << threads << " threads");
  set_num_threads(threads);
  MLP<double> m({.dim = C, .hidden = H, .activation = kind});
  randomize(m, 1);
  auto& wf = m.parameter("fc.weight").value();
  auto& bf = m.parameter("fc.bias").value();
  Parameter<double> wp("wp", m.parameter("proj.weight").value()), bp("bp", m.parameter("proj.bias").value());
  Parameter<double> x("x", randn({B, Tn, C}, 2)), x_ref("x", x.value());
  const Tensor<double> dy = randn({B, Tn, C}, 3);

  Tape<double> t1, t2;
  Var<double> fused = m.forward(t1.param(x));
  auto lin = [&](Var<double> in, Parameter<double>& w, Parameter<double>& b) {
    return add(matmul(in, t2.param(w), Trans::kNo, Trans::kYes), t2.param(b));
  };
  Var<double> composed;
  Parameter<double> w1("w1", rows_of(wf, 0, H)), b1("b1", rows_of(bf, 0, H));
  Parameter<double> w3("w3", rows_of(wf, H, kind == MlpActivation::kSwiGLU ? H : 0));
  Parameter<double> b3("b3", rows_of(bf, H, kind == MlpActivation::kSwiGLU ? H : 0));
  if (kind == MlpActivation::kGelu) {
    composed = lin(gelu(lin(t2.param(x_ref), w1, b1)), wp, bp);
  } else {
    composed = lin(mul(silu(lin(t2.param(x_ref), w1, b1)), lin(t2.param(x_ref), w3, b3)), wp, bp);
  }
  REQUIRE_THAT(fused.value(), AllClose<double>(to_vector<double>(composed.value()), 1e-13, 1e-12));
  t1.backward(fused, dy.view());
  t2.backward(composed, dy.view());
  set_num_threads(0);
  CHECK_THAT(x.grad().view(), AllClose<double>(to_vector<double>(x_ref.grad().view()), 1e-12, 1e-11));
  const auto& dwf = m.parameter("fc.weight").grad();
  const auto& dbf = m.parameter("fc.bias").grad();
  CHECK_THAT(TensorView<const double>(dwf.data(), {H, C}), AllClose<double>(to_vector<double>(w1.grad().view()), 1e-12, 1e-11));
  CHECK_THAT(TensorView<const double>(dbf.data(), {H}), AllClose<double>(to_vector<double>(b1.grad().view()), 1e-12, 1e-11));
  if (kind == MlpActivation::kSwiGLU) {
    CHECK_THAT(TensorView<const double>(dwf.data() + H * C, {H, C}), AllClose<double>(to_vector<double>(w3.grad().view()), 1e-12, 1e-11));
    CHECK_THAT(TensorView<const double>(dbf.data() + H, {H}), AllClose<double>(to_vector<double>(b3.grad().view()), 1e-12, 1e-11));
  }
  CHECK_THAT(m.parameter("proj.weight").grad().view(), AllClose<double>(to_vector<double>(wp.grad().view()), 1e-12, 1e-11));
  CHECK_THAT(m.parameter("proj.bias").grad().view(), AllClose<double>(to_vector<double>(bp.grad().view()), 1e-12, 1e-11));
}

TEST_CASE("mlp: default hidden sizes", "[nn]") {
  CHECK(default_mlp_hidden(128, MlpActivation::kGelu) == 512);
  CHECK(default_mlp_hidden(128, MlpActivation::kSwiGLU) == 344);  // 8/3 * 128 = 341.3, up to a multiple of 8
  CHECK(MLP<float>({.dim = 128, .activation = MlpActivation::kSwiGLU}).num_parameters() == 3 * 128 * 344 + 2 * 344 + 128);
}

TEST_CASE("gradcheck: mlp gelu", "[nn][gradcheck]") {
  const bool bias = GENERATE(true, false);
  const Shape xs = GENERATE(Shape{1, 1, 3}, Shape{2, 3, 5});
  MLP<double> m({.dim = xs[-1], .hidden = 7, .activation = MlpActivation::kGelu, .bias = bias});
  randomize(m, 3);
  Parameter<double> x("x", randn(xs, 4));
  require_gradcheck(gradcheck_module("mlp gelu", m, x, [&](Var<double> v) { return m.forward(v); }));
}

TEST_CASE("gradcheck: mlp swiglu", "[nn][gradcheck]") {
  const bool bias = GENERATE(true, false);
  const Shape xs = GENERATE(Shape{1, 1, 3}, Shape{2, 3, 5});
  MLP<double> m({.dim = xs[-1], .hidden = 7, .activation = MlpActivation::kSwiGLU, .bias = bias});
  randomize(m, 5);
  Parameter<double> x("x", randn(xs, 6));
  require_gradcheck(gradcheck_module("mlp swiglu", m, x, [&](Var<double> v) { return m.forward(v); }));
}

TEST_CASE("mlp: float32 agrees with float64", "[nn][precision]") {
  const MlpActivation kind = GENERATE(MlpActivation::kGelu, MlpActivation::kSwiGLU);
  const int64_t width = kind == MlpActivation::kGelu ? 64 : 128;
  require_precisions_agree([&](auto&, auto in) { return mlp(in[0], in[1], in[2], in[3], in[4], kind); },
                           {randn({4, 8, 32}, 1), randn({width, 32}, 2, 0.2), randn({32, 64}, 3, 0.2),
                            randn({width}, 4), randn({32}, 5)},
                           1e-5);
}

TEST_CASE("mlp: an input whose last dim is 0 is an Error naming the shapes, not a division by zero", "[nn][errors]") {
  MLP<float> m({.dim = 4});
  Tape<float> t;
  REQUIRE_THROWS_WITH(m.forward(t.constant(Tensor<float>(Shape{0}))), Catch::Contains("do not fit input (0)"));
  REQUIRE_THROWS_WITH(m.forward(t.constant(Tensor<float>(Shape{2, 0}))), Catch::Contains("do not fit input (2,0)"));
  CHECK(m.forward(t.constant(Tensor<float>(Shape{2, 0, 4}))).shape() == Shape{2, 0, 4});
}
