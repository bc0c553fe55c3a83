// A warmed-up training step must not touch the heap: the tape reuses its node and value vectors
// and its arena, and closures live inline. This program replaces the global operator new to
// count every allocation made through it.
#include <atomic>
#include <cstdlib>
#include <new>

#include "support.h"
#include "tapegrad/lm/batch_parallel.h"
#include "tapegrad/lm/trainer.h"
#include "tapegrad/ops.h"
#include "tapegrad/threads.h"

#include "allocation_counter.h"

using namespace tapegrad;

TEST_CASE("tape: a warmed-up step makes zero heap allocations", "[tape][alloc]") {
  Rng rng(1);
  const int64_t B = 4, T = 16, C = 32, V = 50;
  Parameter<float> wte("wte", Tensor<float>::randn({V, C}, rng, 0.02));
  Parameter<float> w1("w1", Tensor<float>::randn({4 * C, C}, rng, 0.02));
  Parameter<float> b1("b1", Tensor<float>(Shape{4 * C}));
  Parameter<float> w2("w2", Tensor<float>::randn({C, 4 * C}, rng, 0.02));
  std::vector<int32_t> ids(B * T), targets(B * T);
  for (auto& i : ids) i = static_cast<int32_t>(rng.below(V));
  for (auto& t : targets) t = static_cast<int32_t>(rng.below(V));

  Tape<float> tape;
  auto step = [&] {
    tape.clear();
    Var<float> x = embedding(tape.param(wte), ids, {B, T});
    Var<float> h = gelu(add(matmul(x, tape.param(w1), Trans::kNo, Trans::kYes), tape.param(b1)));
    Var<float> y = add(x, matmul(h, tape.param(w2), Trans::kNo, Trans::kYes));
    Var<float> logits = matmul(y, tape.param(wte), Trans::kNo, Trans::kYes);  // tied head
    tape.backward(cross_entropy(logits, targets));
  };
  for (int i = 0; i < 3; ++i) step();  // warm-up: the arena and vectors reach their peak size
  const int64_t before = alloc_counter::allocations();
  for (int i = 0; i < 20; ++i) step();
  const int64_t during = alloc_counter::allocations() - before;
  INFO("heap allocations in 20 warmed-up steps: " << during);
  CHECK(during == 0);
  CHECK(before > 0);  // the counter works: warm-up did allocate
}

TEST_CASE("batch parallel: a warmed-up step split over two threads makes zero heap allocations", "[lm][alloc]") {
  nn::DecoderConfig c;
  c.vocab_size = 30, c.ctx = 16, c.layers = 2, c.heads = 2, c.dim = 32;
  nn::Decoder<float> model(c, 1);
  auto params = model.parameters();
  const int64_t B = 4, T = 16;
  Rng rng(2);
  std::vector<int32_t> ids(B * T), targets(B * T);
  for (auto& i : ids) i = static_cast<int32_t>(rng.below(c.vocab_size));
  for (auto& t : targets) t = static_cast<int32_t>(rng.below(c.vocab_size));
  set_num_threads(2);
  lm::BatchParallelStep<float> step(model, params);
  nn::DecoderProbe probe;  // the lab's statistics too
  const auto run = [&] {
    for (auto* p : params) p->zero_grad();
    step.forward_backward(ids, targets, B, T, &probe);
  };
  for (int i = 0; i < 3; ++i) run();
  const int64_t before = alloc_counter::allocations();
  for (int i = 0; i < 20; ++i) run();
  const int64_t during = alloc_counter::allocations() - before;
  set_num_threads(0);
  CHECK(step.workers() == 2);
  INFO("heap allocations in 20 warmed-up split steps: " << during);
  CHECK(during == 0);
}

TEST_CASE("trainer: a warmed-up step accumulating micro-batches, instrumented, makes zero heap allocations", "[lm][alloc]") {
  lm::TrainConfig c;
  c.model.layers = 2, c.model.heads = 2, c.model.dim = 32, c.model.ctx = 16, c.batch = 6, c.accumulate = 3, c.threads = 2;
  c.instrument = true, c.steps = 100;
  std::string text;
  for (int i = 0; i < 200; ++i) text += "the fox sees the heron by the river. ";
  auto tokenizer = lm::build_tokenizer(c, text, "the text");
  lm::Trainer trainer(c, tokenizer, lm::make_token_data(c, *tokenizer, text));
  for (int i = 0; i < 3; ++i) trainer.train_step();
  const int64_t before = alloc_counter::allocations();
  for (int i = 0; i < 20; ++i) trainer.train_step();
  const int64_t during = alloc_counter::allocations() - before;
  set_num_threads(0);
  INFO("heap allocations in 20 warmed-up trainer steps: " << during);
  CHECK(during == 0);
}
