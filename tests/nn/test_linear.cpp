#include "nn_support.h"
#include "tapegrad/nn/linear.h"
#include "tapegrad/ops.h"
#include "tapegrad/param_grads.h"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::testing;

TEST_CASE("linear: y = x W^T + b with W stored (out, in)", "[nn]") {
  Linear<double> lin({.in = 2, .out = 3});
  lin.weight().value() = Tensor<double>::from({1, 0, 0, 1, 1, 1}, {3, 2});
  lin.bias()->value() = Tensor<double>::from({10, 20, 30}, {3});
  Tape<double> tape;
  const auto x = Tensor<double>::from({1, 2, 3, 4}, {2, 2});
  Var<double> y = lin.forward(tape.constant(x));
  CHECK(y.shape() == Shape{2, 3});
  CHECK_THAT(y.value(), AllClose<double>({11, 22, 33, 13, 24, 37}));
}

TEST_CASE("gradcheck: linear", "[nn][gradcheck]") {
  const bool bias = GENERATE(true, false);
  const auto [xs, out] = GENERATE(std::pair{Shape{1, 1}, 1}, std::pair{Shape{2, 3, 5}, 7}, std::pair{Shape{4, 3}, 2});
  Linear<double> lin({.in = xs[-1], .out = out, .bias = bias});
  randomize(lin, 1);
  Parameter<double> x("x", randn(xs, 2));
  require_gradcheck(gradcheck_module("linear", lin, x, [&](Var<double> v) { return lin.forward(v); }));
}

TEST_CASE("linear: float32 agrees with float64", "[nn][precision]") {
  require_precisions_agree([](auto&, auto in) { return linear(in[0], in[1], in[2]); },
                           {randn({3, 7, 32}, 3), randn({48, 32}, 4), randn({48}, 5)}, 1e-5);
}

TEST_CASE("linear: mismatched shapes are named", "[nn][errors]") {
  Linear<float> lin({.in = 4, .out = 2});
  Tape<float> tape;
  const Tensor<float> x(Shape{3, 5});
  REQUIRE_THROWS_WITH(lin.forward(tape.constant(x)),
                      "linear: input (3,5) does not end in in_features = 4 of weight (2,4)");
}

TEST_CASE("linear: gradients handed over unwritten are written, repeated ones added", "[nn][tape]") {
  // w feeds two linear nodes: the later one (first in backward) may write w's lazily zeroed
  // buffer, the other must add to it. linear(v, v) names one value twice: both halves add.
  Rng rng(11);
  Parameter<double> x("x", Tensor<double>::randn(Shape{4, 4}, rng)), w("w", Tensor<double>::randn(Shape{4, 4}, rng)),
      b("b", Tensor<double>::randn(Shape{4}, rng));
  const auto loss = [&](Tape<double>& t) {
    Var<double> vw = t.param(w);
    Var<double> h = nn::linear(t.param(x), vw, t.param(b));
    return sum(mul(nn::linear(h, vw), nn::linear(vw, vw)));
  };
  std::vector<Parameter<double>*> ps{&x, &w, &b};
  Tape<double> plain;
  for (auto* p : ps) p->zero_grad();
  plain.backward(loss(plain));
  std::vector<std::vector<double>> expect;
  for (auto* p : ps) expect.push_back(to_vector<double>(p->grad().view()));

  ParamGrads<double> grads(ps);
  grads.zero();
  for (auto* p : ps) p->grad().fill(std::nan(""));  // stale: must not leak into anything
  Tape<double> lazy;
  lazy.set_param_grads(&grads);
  lazy.backward(loss(lazy));
  for (auto* p : ps) p->zero_grad();
  grads.add_into_params();
  for (size_t i = 0; i < ps.size(); ++i) {
    INFO(ps[i]->name);
    CHECK_THAT(ps[i]->grad().view(), AllClose<double>(expect[i], 1e-14, 1e-14));
  }
}

TEST_CASE("tape: an unwritten gradient reads as zero", "[tape]") {
  Parameter<double> used("used", Tensor<double>::from({1, 2}, {2})), unused("unused", Tensor<double>::from({3}, {1}));
  std::vector<Parameter<double>*> ps{&used, &unused};
  ParamGrads<double> grads(ps);
  grads.grad_for(unused).data()[0] = 5;
  grads.zero();
  CHECK(grads.grad_for(unused).data()[0] == 0);  // filled on access
  grads.zero();
  Tape<double> tape;
  tape.set_param_grads(&grads);
  Var<double> vu = tape.param(unused);
  tape.backward(sum(scale(tape.param(used), 2.0)));
  CHECK(to_vector<double>(tape.grad(vu)) == std::vector<double>{0});
  CHECK(to_vector<double>(grads.grad_for(used)) == std::vector<double>{2, 2});
  unused.grad().fill(7);
  grads.zero();
  grads.add_into_params();  // nothing written: nothing added
  CHECK(unused.grad().data()[0] == 7);
}
