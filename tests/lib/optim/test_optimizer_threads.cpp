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

TEST_CASE("optimizers: step_measured is step's update and each parameter's |w_after - w_before|^2, on 1 and 2 threads",
          "[optim][determinism]") {
  // AdamW takes the sums inside its update pass (its threads' shares added in order); SGD uses the
  // default, a copy of the weights around step(). Both against step() on a twin and the sums
  // written out in double.
  for (const int threads : {1, 2}) {
    set_num_threads(threads);
    for (const bool adam : {true, false}) {
      INFO((adam ? "AdamW" : "SGD") << " on " << threads << " threads");
      Model measured, plain;
      const auto make = [&](Model& m) -> std::unique_ptr<Optimizer<float>> {
        if (adam) return std::make_unique<AdamW<float>>(m.params, AdamWOptions{.weight_decay = 0.1});
        return std::make_unique<SGD<float>>(m.params, SGDOptions{.momentum = 0.9, .weight_decay = 0.01});
      };
      auto a = make(measured), b = make(plain);
      std::vector<double> squares(measured.params.size(), -1.0);
      for (int s = 0; s < 3; ++s) {
        measured.set_grads(200 + static_cast<uint64_t>(s)), plain.set_grads(200 + static_cast<uint64_t>(s));
        const std::vector<float> before = measured.values();
        a->step_measured(1e-2, 0.5, squares);
        b->step(1e-2, 0.5);
        REQUIRE(measured.values() == plain.values());  // the same update, bit for bit
        size_t at = 0;
        for (size_t k = 0; k < measured.params.size(); ++k) {
          const Parameter<float>& p = *measured.params[k];
          double direct = 0;
          for (int64_t i = 0; i < p.numel(); ++i) {
            const double d = double(p.value()[i]) - double(before[at + static_cast<size_t>(i)]);
            direct += d * d;
          }
          at += static_cast<size_t>(p.numel());
          if (!p.requires_grad || p.numel() == 0) REQUIRE(squares[k] == 0.0);  // frozen or empty: no change
          else REQUIRE(squares[k] > 0.0);
          REQUIRE(std::abs(squares[k] - direct) <= 1e-12 * direct);
        }
      }
      std::vector<double> short_of_one(measured.params.size() - 1);
      CHECK_THROWS_WITH(a->step_measured(1e-2, 1.0, short_of_one),
                        "Optimizer::step_measured: 69 sums for 70 parameters");
    }
  }
  set_num_threads(0);
}

TEST_CASE("parallel_for_arrays: a body taking the chunk gets one chunk per thread, each its thread's share", "[parallel]") {
  const std::vector<int64_t> sizes{0, 1, 40001, 3, 65536};
  for (const int threads : {1, 2}) {
    set_num_threads(threads);
    for (const int64_t work : {int64_t{0}, int64_t{1} << 20}) {  // inline (chunk 0 the whole array), split
      std::vector<std::vector<int64_t>> begins(sizes.size(), std::vector<int64_t>(2, -1));
      parallel_for_arrays(
          static_cast<int64_t>(sizes.size()), [&](int64_t k) { return sizes[static_cast<size_t>(k)]; }, work,
          [&](int64_t chunk, int64_t k, int64_t i0, int64_t i1) {
            REQUIRE(chunk >= 0);
            REQUIRE(chunk < threads);
            REQUIRE(i1 >= i0);  // inline, an empty array is still called once
            if (i1 > i0) begins[static_cast<size_t>(k)][static_cast<size_t>(chunk)] = i0;
          });
      int64_t total = 0;
      for (int64_t n : sizes) total += n;
      // Inline below kMinParallelWork, else the static schedule's chunks (parallel_for's).
      const int64_t nt = threads == 2 && total * work >= kMinParallelWork ? 2 : 1;
      for (size_t k = 0; k < sizes.size(); ++k) {
        INFO("array " << k << ", " << threads << " threads, work " << work);
        const int64_t n = sizes[k];
        for (int64_t t = 0; t < 2; ++t) {
          const bool has = t < nt && n * (t + 1) / nt > n * t / nt;
          CHECK(begins[k][static_cast<size_t>(t)] == (has ? n * t / nt : -1));
        }
      }
    }
  }
  set_num_threads(0);
}
