// A language model of the user's own through lm::Trainer: trained, checkpointed, resumed bitwise,
// sampled; the decoder-only settings refused by name.
#include <filesystem>

#include "support.h"
#include "tapegrad/lm/checkpoint.h"
#include "tapegrad/lm/corpus.h"
#include "tapegrad/lm/sampling.h"
#include "tapegrad/lm/trainer.h"
#include "tapegrad/nn/embedding.h"
#include "tapegrad/nn/language_model.h"

using namespace tapegrad;
using namespace tapegrad::lm;
namespace fs = std::filesystem;

namespace {

// The next token's logits read off a table by the current token: logits[b, t] = W[ids[b, t]].
class Bigram : public nn::LanguageModel<float> {
 public:
  Bigram(int64_t vocab, int64_t context, uint64_t seed) : vocab_(vocab), context_(context) {
    table_ = &add_module("table", std::make_unique<nn::Embedding<float>>(nn::EmbeddingOptions{.num = vocab, .dim = vocab, .init_std = 0.02}));
    Rng rng(seed);
    reset_parameters(rng);
  }
  Output forward(Tape<float>& tape, std::span<const int32_t> ids, int64_t B, int64_t T,
                 std::span<const int32_t> targets) override {
    return nn::lm_output(table_->forward(tape, ids, {B, T}), targets);
  }
  int64_t vocab_size() const override { return vocab_; }
  int64_t ctx() const override { return context_; }
  std::string type_name() const override { return "Bigram"; }

 private:
  int64_t vocab_, context_;
  nn::Embedding<float>* table_;
};

TrainConfig bigram_config() {
  TrainConfig c;
  c.model.ctx = 16, c.batch = 8, c.steps = 40, c.warmup = 0, c.lr = 2e-1, c.eval_iters = 2, c.threads = 2;
  return c;
}

struct Run {
  std::shared_ptr<text::Tokenizer> tok;
  std::shared_ptr<TokenData> data;
};

Run corpus(const TrainConfig& c) {
  const std::string& text = default_corpus();
  Run r;
  r.tok = build_tokenizer(c, text, "corpus");
  r.data = make_token_data(c, *r.tok, text);
  return r;
}

std::unique_ptr<Trainer> bigram_trainer(const TrainConfig& c, const Run& r) {
  return std::make_unique<Trainer>(c, std::make_unique<Bigram>(r.tok->vocab_size(), 64, c.seed), r.tok, r.data);
}

}  // namespace

TEST_CASE("language model: a model of the user's own trains through lm::Trainer, pinned", "[train][language_model]") {
  const TrainConfig c = bigram_config();
  const Run r = corpus(c);
  auto t = bigram_trainer(c, r);
  CHECK(t->decoder() == nullptr);
  CHECK(t->model().type_name() == "Bigram");
  const double first = t->train_step().loss;
  // A table of N(0, 0.02^2) logits: the loss starts at log V.
  CHECK(first == Approx(std::log(static_cast<double>(r.tok->vocab_size()))).epsilon(1e-3));
  double last = 0;
  for (int i = 1; i < c.steps; ++i) last = t->train_step().loss;
  // The seed's numbers (an embedding lookup, cross-entropy and AdamW: no ISA-dispatched kernel).
  CHECK(first == Approx(4.84340429).epsilon(1e-7));
  CHECK(last == Approx(2.36201859).epsilon(1e-6));
  const EvalResult e = t->evaluate();
  CHECK(e.val_loss < first - 1.0);
  // The same seed and threads: the same losses, bit for bit.
  auto again = bigram_trainer(c, r);
  double last2 = 0;
  for (int i = 0; i < c.steps; ++i) last2 = again->train_step().loss;
  CHECK(last2 == last);
  Rng rng(3);
  const auto ids = generate(t->model(), t->tokenizer(), "the", 12, {.temperature = 0}, rng);
  CHECK(ids.size() == 12);
}

TEST_CASE("language model: a decoder built by the caller trains as the trainer's own, bitwise", "[train][language_model]") {
  TrainConfig c = bigram_config();
  c.model.layers = 1, c.model.heads = 2, c.model.dim = 16, c.lr = 1e-2, c.steps = 5;
  const Run r = corpus(c);
  Trainer own(c, r.tok, r.data);
  Trainer given(c, std::make_unique<nn::Decoder<float>>(c.model_for(r.tok->vocab_size()), c.seed), r.tok, r.data);
  REQUIRE(given.decoder() != nullptr);
  for (int i = 0; i < c.steps; ++i) CHECK(own.train_step().loss == given.train_step().loss);
}

TEST_CASE("language model: checkpointed and resumed with the function that builds it, bitwise", "[train][language_model]") {
  const TrainConfig c = bigram_config();
  const Run r = corpus(c);
  const fs::path dir = fs::temp_directory_path() / "tapegrad_test_bigram_ckpt";
  fs::remove_all(dir);
  auto straight = bigram_trainer(c, r);
  std::vector<double> losses;
  for (int i = 0; i < 20; ++i) losses.push_back(straight->train_step().loss);
  auto first = bigram_trainer(c, r);
  for (int i = 0; i < 10; ++i) first->train_step();
  save_checkpoint(*first, dir.string());
  const auto build = [&] { return std::make_unique<Bigram>(r.tok->vocab_size(), 64, 99); };  // weights come from the file
  auto resumed = resume_trainer(dir.string(), {.text = default_corpus(), .model = build});
  CHECK(resumed->step() == 10);
  for (int i = 10; i < 20; ++i) CHECK(resumed->train_step().loss == losses[static_cast<size_t>(i)]);

  REQUIRE_THROWS_WITH(resume_trainer(dir.string(), {.text = default_corpus()}),
                      Catch::Contains("checkpoint.json: the checkpoint holds a Bigram, a model of the user's own: pass "
                                      "ResumeOverrides::model, a function that builds it"));
  REQUIRE_THROWS_WITH(resume_trainer(dir.string(), {.text = default_corpus(),
                                                    .model = [&] { return std::make_unique<nn::Decoder<float>>(c.model_for(r.tok->vocab_size()), 1); }}),
                      Catch::Contains("checkpoint.json: the checkpoint holds a Bigram, ResumeOverrides::model built a Decoder"));
  REQUIRE_THROWS_WITH(load_model(dir.string()), Catch::Contains("the checkpoint holds a Bigram, a model of the user's own: build "
                                                                "it and load"));
  fs::remove_all(dir);
}

TEST_CASE("language model: the decoder's settings asked of another model are errors naming them", "[train][language_model][errors]") {
  const Run r = corpus(bigram_config());
  const auto refused = [&](TrainConfig c, int64_t context, const std::string& message) {
    INFO(message);
    REQUIRE_THROWS_WITH(Trainer(c, std::make_unique<Bigram>(r.tok->vocab_size(), context, 1), r.tok, r.data),
                        message);
  };
  TrainConfig c = bigram_config();
  c.instrument = true;
  refused(c, 64, "instrument needs tapegrad's decoder; the model is a Bigram");
  c = bigram_config();
  c.sharpness_every = 5;
  refused(c, 64, "sharpness-every needs tapegrad's decoder; the model is a Bigram");
  c = bigram_config();
  c.model.z_loss = 1e-4;
  refused(c, 64, "z-loss is added by tapegrad's decoder; a Bigram adds it in its own forward (nn::lm_output(logits, targets, z_loss))");
  refused(bigram_config(), 8, "ctx 16 exceeds the 8 positions Bigram::ctx() accepts");
  REQUIRE_THROWS_WITH(Trainer(bigram_config(), std::make_unique<Bigram>(r.tok->vocab_size() + 1, 64, 1), r.tok, r.data),
                      cat("Bigram's vocab_size() is ", r.tok->vocab_size() + 1, ", the tokenizer has ", r.tok->vocab_size(), " tokens"));
  auto t = bigram_trainer(bigram_config(), r);
  REQUIRE_THROWS_WITH(t->decoder("sharpness"), "sharpness needs tapegrad's decoder; this trainer's model is a Bigram");
}
