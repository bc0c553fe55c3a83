#include <mutex>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "support.h"
#include "tapegrad/gemm_bf16.h"
#include "tapegrad/lm/batch_parallel.h"
#include "tapegrad/threads.h"

using namespace tapegrad;
using namespace tapegrad::testing;

namespace {

nn::DecoderConfig tiny() {
  nn::DecoderConfig c;
  c.vocab_size = 11, c.ctx = 6, c.layers = 2, c.heads = 2, c.dim = 8;
  return c;
}

template <typename T>
void randomize(nn::Decoder<T>& model) {
  Rng rng(3);
  for (auto* p : model.parameters()) p->value() = Tensor<T>::randn(p->shape(), rng, 0.5);
}

std::vector<int32_t> tokens(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& v : t) v = static_cast<int32_t>(rng.below(11));
  return t;
}

}  // namespace

TEST_CASE("batch parallel: the split step's loss, gradients and statistics are the whole batch's", "[lm]") {
  // B = 5 on two threads splits 2 + 3: the shares' losses are weighted, not averaged.
  const int64_t B = GENERATE(4, 5), Tn = 6;
  INFO("B = " << B);
  nn::Decoder<double> model(tiny(), 1);
  randomize(model);
  const auto ids = tokens(B * Tn, 5), targets = tokens(B * Tn, 6);
  auto params = model.parameters();

  set_num_threads(1);
  Tape<double> tape;
  nn::DecoderProbe whole;
  const auto out = model.forward(tape, ids, B, Tn, targets, &whole);
  const double loss = out.loss.value()[0];
  tape.backward(out.loss);
  std::vector<std::vector<double>> expect;
  for (auto* p : params) expect.push_back(to_vector<double>(p->grad().view())), p->zero_grad();

  set_num_threads(2);
  lm::BatchParallelStep<double> step(model, params);
  nn::DecoderProbe split;
  CrossEntropyTerms split_terms;
  for (int repeat = 0; repeat < 2; ++repeat) {  // a second step: the workers' buffers start from zero again
    for (auto* p : params) p->zero_grad();
    split_terms = step.forward_backward(ids, targets, B, Tn, &split);
  }
  set_num_threads(0);
  CHECK(step.workers() == 2);
  CHECK_THAT(split_terms.cross_entropy, Catch::Matchers::WithinRel(loss, 1e-14));
  // log Z: the mean weighted by the shares, the minimum over both.
  CHECK_THAT(split_terms.log_z_mean, Catch::Matchers::WithinRel(out.terms.log_z_mean, 1e-12));
  CHECK_THAT(split_terms.log_z_min, Catch::Matchers::WithinRel(out.terms.log_z_min, 1e-12));
  CHECK(out.terms.log_z_min < out.terms.log_z_mean);
  for (size_t i = 0; i < params.size(); ++i) {
    INFO(params[i]->name);
    CHECK_THAT(params[i]->grad().view(), AllClose<double>(expect[i], 1e-13, 1e-12));
  }
  for (size_t i = 0; i < whole.blocks.size(); ++i) {
    CHECK_THAT(split.blocks[i].residual_rms, Catch::Matchers::WithinRel(whole.blocks[i].residual_rms, 1e-12));
    CHECK_THAT(split.blocks[i].norm_out_rms, Catch::Matchers::WithinRel(whole.blocks[i].norm_out_rms, 1e-12));
    CHECK(split.blocks[i].attention_logit == whole.blocks[i].attention_logit);
  }
  CHECK_THAT(split.final_residual_rms, Catch::Matchers::WithinRel(whole.final_residual_rms, 1e-12));
  CHECK_THAT(split.output_logit_mean, Catch::Matchers::WithinRel(whole.output_logit_mean, 1e-12));
  CHECK(split.output_logit_max == whole.output_logit_max);
}

TEST_CASE("batch parallel: bitwise repeatable for a thread count, no more workers than sequences", "[lm]") {
  const auto run = [](int threads, int64_t B) {
    nn::Decoder<float> model(tiny(), 1);
    auto params = model.parameters();
    set_num_threads(threads);
    lm::BatchParallelStep<float> step(model, params);
    std::vector<float> result;
    for (int s = 0; s < 3; ++s) {  // the workers' private buffers must be zeroed between steps
      for (auto* p : params) p->zero_grad();
      result.push_back(static_cast<float>(step.forward_backward(tokens(B * 6, 10 + s), tokens(B * 6, 20 + s), B, 6).cross_entropy));
    }
    for (auto* p : params) result.insert(result.end(), p->grad().data(), p->grad().data() + p->numel());
    const int workers = step.workers();
    set_num_threads(0);
    return std::pair{result, workers};
  };
  const auto [a, wa] = run(2, 6);
  const auto [b, wb] = run(2, 6);
  CHECK(wa == 2);
  CHECK(a == b);
  CHECK(run(2, 1).second == 1);
}

TEST_CASE("batch parallel: an error in one worker reaches the caller, and the step stays usable", "[lm]") {
  nn::Decoder<float> model(tiny(), 1);
  auto params = model.parameters();
  set_num_threads(2);
  lm::BatchParallelStep<float> step(model, params);
  auto ids = tokens(4 * 6, 1), targets = tokens(4 * 6, 2);
  targets[3 * 6 + 2] = 99;  // in the second worker's share
  CHECK_THROWS_WITH(step.forward_backward(ids, targets, 4, 6), Catch::Matchers::Contains("target 99"));
  targets[2] = 98;  // both workers fail: the first in worker order is reported, and neither error outlives the call
  CHECK_THROWS_WITH(step.forward_backward(ids, targets, 4, 6), Catch::Matchers::Contains("target 98"));
  targets[2] = 1;
  targets[3 * 6 + 2] = 1;
  // After the failed step the same batch gives bitwise what a fresh step gives: nothing of the
  // abandoned pass is left in the workers' buffers.
  const auto grads = [&](lm::BatchParallelStep<float>& s) {
    for (auto* p : params) p->zero_grad();
    std::vector<float> g{static_cast<float>(s.forward_backward(ids, targets, 4, 6).cross_entropy)};
    for (auto* p : params) g.insert(g.end(), p->grad().data(), p->grad().data() + p->numel());
    return g;
  };
  lm::BatchParallelStep<float> fresh(model, params);
  CHECK(grads(step) == grads(fresh));
  set_num_threads(0);
}

TEST_CASE("batch parallel: a team smaller than the workers still computes every share", "[lm]") {
  nn::Decoder<float> model(tiny(), 1);
  auto params = model.parameters();
  set_num_threads(2);
  lm::BatchParallelStep<float> step(model, params), reference(model, params);
  const auto ids = tokens(4 * 6, 1), targets = tokens(4 * 6, 2);
  const auto grads = [&](lm::BatchParallelStep<float>& s, std::span<const int32_t> i, std::span<const int32_t> t) {
    for (auto* p : params) p->zero_grad();
    std::vector<float> g{static_cast<float>(s.forward_backward(i, t, 4, 6).cross_entropy)};
    for (auto* p : params) g.insert(g.end(), p->grad().data(), p->grad().data() + p->numel());
    return g;
  };
  const std::vector<float> expect = grads(reference, ids, targets);
  grads(step, tokens(4 * 6, 3), tokens(4 * 6, 4));  // another batch first: a skipped worker would leave its results
  // Called from inside a parallel region with nesting off, its own region gets one thread.
  const int levels = omp_get_max_active_levels();
  omp_set_max_active_levels(1);
  std::vector<float> nested;
#pragma omp parallel num_threads(2)
  {
    if (omp_get_thread_num() == 0) nested = grads(step, ids, targets);
  }
  omp_set_max_active_levels(levels);
  set_num_threads(0);
  CHECK(step.workers() == 2);
  CHECK(nested == expect);
}

TEST_CASE("batch parallel: add=false writes every gradient over whatever .grad() held", "[lm]") {
  // The first op to reach a parameter writes its gradient (beta = 0 GEMMs, no zero-fill): stale
  // contents — NaN here — must vanish, parameters no op reaches must read zero, and a later
  // add=true step must add onto the written values.
  const int64_t B = 5, Tn = 6;
  const int threads = GENERATE(1, 2);
  INFO(threads << " threads");
  nn::DecoderConfig c = tiny();
  c.bias = true;
  nn::Decoder<double> model(c, 1);
  randomize(model);
  auto params = model.parameters();
  const auto ids = tokens(B * Tn, 7), targets = tokens(B * Tn, 8);
  set_num_threads(threads);
  lm::BatchParallelStep<double> step(model, params);
  for (auto* p : params) p->zero_grad();
  step.forward_backward(ids, targets, B, Tn);
  std::vector<std::vector<double>> expect;
  for (auto* p : params) expect.push_back(to_vector<double>(p->grad().view()));
  REQUIRE(std::any_of(expect[1].begin(), expect[1].end(), [](double g) { return g != 0; }));

  Parameter<double> unused("unused", Tensor<double>::from({1, 2, 3}, {3}));  // in the set, never used
  std::vector<Parameter<double>*> with_unused = params;
  with_unused.push_back(&unused);
  lm::BatchParallelStep<double> step2(model, with_unused);
  for (auto* p : with_unused) p->grad().fill(std::nan(""));
  step2.forward_backward(ids, targets, B, Tn, nullptr, 1.0, /*add=*/false);
  for (size_t i = 0; i < params.size(); ++i) {
    INFO(params[i]->name);
    CHECK_THAT(params[i]->grad().view(), AllClose<double>(expect[i], 0, 0));  // bitwise: 0 + x = x
  }
  CHECK(to_vector<double>(unused.grad().view()) == std::vector<double>{0, 0, 0});
  step2.forward_backward(ids, targets, B, Tn, nullptr, 1.0, /*add=*/true);
  for (size_t i = 0; i < params.size(); ++i) {
    INFO(params[i]->name);
    std::vector<double> twice = expect[i];
    for (double& g : twice) g *= 2;
    CHECK_THAT(params[i]->grad().view(), AllClose<double>(twice, 1e-14, 1e-14));
  }
  set_num_threads(0);
}

TEST_CASE("batch parallel: a hook runs once per module call with the whole batch, on the calling thread", "[lm][hooks]") {
  // B = 5 on two threads: shares of 2 and 3 sequences, joined in order for the hooks.
  const int64_t B = 5, Tn = 6;
  nn::Decoder<double> model(tiny(), 1);
  randomize(model);
  const auto ids = tokens(B * Tn, 5), targets = tokens(B * Tn, 6);
  nn::Module<double>* found = nullptr;
  for (auto& [name, m] : model.named_modules())
    if (name == "blocks.1") found = m;
  REQUIRE(found);
  auto& block = dynamic_cast<nn::UnaryModule<double>&>(*found);
  struct Seen {
    std::vector<std::vector<double>> out, grad;
    std::vector<Shape> shapes;
    std::vector<int> threads;
  };
  Seen seen;
  // Per worker (set_hooks_per_worker below) the hooks run on the workers' threads at once: they
  // must be thread-safe, as a user's would.
  std::mutex mu;
  block.register_forward_hook([&](nn::UnaryModule<double>&, Var<double>, Var<double> y) {
    const std::lock_guard<std::mutex> lock(mu);
    seen.out.push_back(to_vector<double>(y.value())), seen.shapes.push_back(y.shape());
    seen.threads.push_back(omp_in_parallel());
  });
  block.register_backward_hook([&](nn::UnaryModule<double>&, TensorView<const double> dy) {
    const std::lock_guard<std::mutex> lock(mu);
    seen.grad.push_back(to_vector<double>(dy)), seen.threads.push_back(omp_in_parallel());
  });
  // The whole batch on one thread: what every run must show.
  set_num_threads(1);
  {
    Tape<double> tape;
    tape.backward(model.forward(tape, ids, B, Tn, targets).loss);
  }
  REQUIRE(seen.out.size() == 1);
  REQUIRE(seen.grad.size() == 1);
  const Seen whole = std::exchange(seen, {});

  set_num_threads(2);
  lm::BatchParallelStep<double> step(model, model.parameters());
  step.forward_backward(ids, targets, B, Tn);
  CHECK(step.workers() == 2);
  CHECK(seen.out.size() == 1);
  CHECK(seen.grad.size() == 1);
  CHECK(seen.shapes.at(0) == whole.shapes.at(0));
  CHECK_THAT(seen.out.at(0), Catch::Matchers::Approx(whole.out.at(0)).epsilon(1e-12));
  CHECK_THAT(seen.grad.at(0), Catch::Matchers::Approx(whole.grad.at(0)).epsilon(1e-10).margin(1e-15));
  CHECK(std::count(seen.threads.begin(), seen.threads.end(), 1) == 0);  // never inside the workers' region

  // Per worker, when asked: one call per share.
  seen = {};
  nn::set_hooks_per_worker(true);
  step.forward_backward(ids, targets, B, Tn);
  nn::set_hooks_per_worker(false);
  set_num_threads(0);
  CHECK(seen.out.size() == 2);
  CHECK(seen.grad.size() == 2);
  // HooksOff: nothing runs.
  seen = {};
  {
    nn::HooksOff off;
    Tape<double> tape;
    tape.backward(model.forward(tape, ids, B, Tn, targets).loss);
  }
  CHECK(seen.out.empty());
  CHECK(seen.grad.empty());
}

// Under bf16 on the emulated path every GEMM operand of a training step is rounded once: each op
// rounds what two of its GEMMs read ahead (gemm_bf16.h, round_ahead) and every weight's form comes
// from the step's operand cache, made once a step. An op that leaves the rounding to each GEMM, or
// a weight read as a non-constant operand, shows here as operands rounded inside a GEMM call, or
// as fewer forms than weights (the tied head counts: its table is a weight).
TEST_CASE("batch parallel: a bf16 step rounds every GEMM operand once, each weight's form once a step", "[lm][bf16]") {
  const Bf16Kernels kernels = bf16_kernels();
  set_bf16_kernels(Bf16Kernels::kEmulated);
  const bool tie = GENERATE(true, false);
  INFO("tie_head = " << tie);
  nn::DecoderConfig c = tiny();
  c.precision = Precision::kBf16;
  c.tie_head = tie;
  nn::Decoder<float> model(c, 1);
  auto params = model.parameters();
  set_num_threads(2);
  lm::BatchParallelStep<float> step(model, params);
  const int64_t before = bf16_operands_rounded_in_gemm();
  constexpr int kSteps = 2;
  for (int s = 0; s < kSteps; ++s) step.forward_backward(tokens(4 * 6, 30 + s), tokens(4 * 6, 40 + s), 4, 6);
  const int workers = step.workers();
  set_num_threads(0);
  set_bf16_kernels(kernels);
  CHECK(workers == 2);
  CHECK(bf16_operands_rounded_in_gemm() - before == 0);
  // Per layer the attention's qkv and projection, the MLP's two; then the head (tied: the table).
  const int64_t weights = 4 * c.layers + 1;
  CHECK(step.operand_cache().fills() == kSteps * weights);
}
