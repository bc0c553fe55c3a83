// The passes over every parameter (zero_grad, the gradient norm, the optimizer updates, a
// ParamGrads sum) run in one parallel region each (parallel_for_arrays): every element of every
// parameter must be touched exactly once, and the results must not depend on the thread count.
#include <cmath>
#include <memory>
#include <vector>

#include "support.h"
#include "tapegrad/optim/adamw.h"
#include "tapegrad/optim/clip.h"
#include "tapegrad/optim/sgd.h"
#include "tapegrad/parallel.h"
#include "tapegrad/param_grads.h"
#include "tapegrad/threads.h"

using namespace tapegrad;
using namespace tapegrad::testing;

namespace {

// 70 parameters (more than grad_norm's batch of 64) of sizes from 0 to 40,000 elements: small
// ones that would run inline on their own, large ones split between the threads, a frozen one.
struct Model {
  std::vector<std::unique_ptr<Parameter<float>>> owned;
  std::vector<Parameter<float>*> params;

  Model() {
    Rng rng(5);
    for (int k = 0; k < 70; ++k) {
      const int64_t n = k == 3 ? 0 : (k % 7 == 0 ? 40000 : 1 + 37 * k);
      auto p = std::make_unique<Parameter<float>>(cat("p", k), Tensor<float>(Shape{n}));
      for (int64_t i = 0; i < n; ++i) p->value()[i] = static_cast<float>(rng.normal());
      p->requires_grad = k != 10;
      params.push_back(p.get());
      owned.push_back(std::move(p));
    }
  }
  void set_grads(uint64_t seed) {
    Rng rng(seed);
    for (Parameter<float>* p : params)
      for (int64_t i = 0; i < p->numel(); ++i) p->grad()[i] = static_cast<float>(rng.normal());
  }
  std::vector<float> values() const {
    std::vector<float> v;
    for (const Parameter<float>* p : params) v.insert(v.end(), p->value().data(), p->value().data() + p->numel());
    return v;
  }
};

// Three AdamW and three SGD steps with clipping; returns the parameters and the norms seen.
std::pair<std::vector<float>, std::vector<double>> train(int threads) {
  set_num_threads(threads);
  Model m;
  AdamW<float> adam(m.params, {.weight_decay = 0.1});
  SGD<float> sgd(m.params, {.momentum = 0.9, .weight_decay = 0.01});
  std::vector<double> norms;
  for (int s = 0; s < 6; ++s) {
    adam.zero_grad();
    for (const Parameter<float>* p : m.params)
      for (int64_t i = 0; i < p->numel(); ++i) REQUIRE(p->grad()[i] == 0.0f);
    m.set_grads(100 + static_cast<uint64_t>(s));
    const double norm = grad_norm<float>(m.params);
    norms.push_back(norm);
    Optimizer<float>& opt = s < 3 ? static_cast<Optimizer<float>&>(adam) : sgd;
    opt.step(1e-2, clip_factor(norm, 50.0));
  }
  set_num_threads(0);
  return {m.values(), norms};
}

}  // namespace

TEST_CASE("parallel_for_arrays: every element of every array exactly once", "[parallel]") {
  const int threads = GENERATE(1, 2);
  set_num_threads(threads);
  const std::vector<int64_t> sizes{0, 1, 5, 40001, 3, 0, 65536, 2};
  for (const int64_t work : {int64_t{1}, int64_t{1} << 20}) {  // inline, and split between threads
    std::vector<std::vector<int>> seen;
    for (int64_t n : sizes) seen.emplace_back(static_cast<size_t>(n), 0);
    parallel_for_arrays(
        static_cast<int64_t>(sizes.size()), [&](int64_t k) { return sizes[static_cast<size_t>(k)]; }, work,
        [&](int64_t k, int64_t i0, int64_t i1) {
          for (int64_t i = i0; i < i1; ++i) ++seen[static_cast<size_t>(k)][static_cast<size_t>(i)];
        });
    for (const auto& s : seen)
      for (int c : s) REQUIRE(c == 1);
  }
  set_num_threads(0);
}

TEST_CASE("optimizers: zero_grad, the gradient norm and the updates are the same bits on 1 and 2 threads",
          "[optim][determinism]") {
  const auto [one_values, one_norms] = train(1);
  const auto [two_values, two_norms] = train(2);
  REQUIRE(one_norms == two_norms);
  REQUIRE(one_values == two_values);
  // The norm is the sum over parameters in order (in double): check it against that, written out.
  Model m;
  m.set_grads(100);
  double sq = 0;
  for (const Parameter<float>* p : m.params)
    for (int64_t i = 0; i < p->numel(); ++i) sq += double(p->grad()[i]) * double(p->grad()[i]);
  CHECK_THAT(one_norms[0], Catch::Matchers::WithinRel(std::sqrt(sq), 1e-12));
  CHECK(one_norms[0] > 50.0);  // so the steps above clip
}

TEST_CASE("ParamGrads: zero and the sum into the parameters, 1 and 2 threads", "[optim]") {
  const int threads = GENERATE(1, 2);
  set_num_threads(threads);
  Model m;
  m.set_grads(7);
  ParamGrads<float> extra(m.params);
  extra.zero();
  Rng rng(8);
  std::vector<float> expect;
  for (Parameter<float>* p : m.params) {
    TensorView<float> g = extra.grad_for(*p);
    for (int64_t i = 0; i < p->numel(); ++i) {
      REQUIRE(g[i] == 0.0f);
      g[i] = static_cast<float>(rng.normal());
      expect.push_back(p->grad()[i] + g[i]);
    }
  }
  extra.add_into_params();
  std::vector<float> got;
  for (const Parameter<float>* p : m.params) got.insert(got.end(), p->grad().data(), p->grad().data() + p->numel());
  CHECK(got == expect);
  set_num_threads(0);
}
