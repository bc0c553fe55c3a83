#include "trainer.h"

#include <chrono>
#include <cmath>
#include <cstring>

#include "corpus.h"
#include "tapegrad/io/file.h"
#include "tapegrad/optim/adamw.h"
#include "tapegrad/optim/clip.h"
#include "tapegrad/optim/sgd.h"
#include "tapegrad/text/bpe_tokenizer.h"
#include "tapegrad/text/char_tokenizer.h"
#include "tapegrad/text/utf8.h"
#include "tapegrad/threads.h"

namespace tapegrad::lm {

namespace {
// The batch stream and the evaluation batches get generators of their own, derived from the
// run's seed, so that changing eval settings never changes the training batches.
uint64_t data_seed(uint64_t seed) { return seed * 0x9e3779b97f4a7c15ULL + 1; }
uint64_t val_seed(uint64_t seed) { return seed * 0x9e3779b97f4a7c15ULL + 2; }
uint64_t train_eval_seed(uint64_t seed) { return seed * 0x9e3779b97f4a7c15ULL + 3; }
}  // namespace

Trainer::Trainer(const TrainConfig& config, std::shared_ptr<const text::Tokenizer> tokenizer,
                 std::shared_ptr<const TokenData> data)
    : config_(config),
      tokenizer_(std::move(tokenizer)),
      data_(std::move(data)),
      sampler_(data_->train, config.batch, config.ctx, data_seed(config.seed)) {
  config_.validate();
  set_num_threads(config_.threads);
  model_ = std::make_unique<nn::Decoder<float>>(config_.model(tokenizer_->vocab_size()), config_.seed);
  params_ = model_->parameters();
  if (config_.optimizer == "adamw") {
    optimizer_ = std::make_unique<AdamW<float>>(
        params_, AdamWOptions{.beta1 = config_.beta1, .beta2 = config_.beta2, .eps = 1e-8, .weight_decay = config_.weight_decay});
  } else {
    optimizer_ = std::make_unique<SGD<float>>(params_, SGDOptions{.momentum = config_.momentum, .weight_decay = config_.weight_decay});
  }
  schedule_ = {config_.lr, config_.min_lr, config_.warmup, config_.steps};
  if (config_.instrument) instrument_ = std::make_unique<Instrument>(*model_);
}

StepResult Trainer::train_step() {
  const auto t0 = std::chrono::steady_clock::now();
  sampler_.next(ids_, targets_);
  tape_.clear();
  optimizer_->zero_grad();
  auto out = model_->forward(tape_, ids_, config_.batch, config_.ctx, targets_,
                             instrument_ ? instrument_->probe() : nullptr);
  StepResult r;
  r.loss = out.loss.value()[0];
  tape_.backward(out.loss);
  if (instrument_) instrument_->after_backward();
  r.grad_norm = last_grad_norm_ = grad_norm<float>(params_);
  r.lr = schedule_.at(step_);
  r.finite = std::isfinite(r.loss) && std::isfinite(r.grad_norm);
  if (r.finite) {  // never write NaN/Inf into the weights
    if (instrument_) instrument_->before_update();
    optimizer_->step(r.lr, clip_factor(r.grad_norm, config_.clip));  // clipping folded into the update
    if (instrument_) instrument_->after_update();
  }
  r.step = ++step_;
  r.step_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  r.tokens_per_s = static_cast<double>(config_.batch * config_.ctx) / (r.step_ms / 1000.0);
  return r;
}

double Trainer::loss_on(std::span<const int32_t> ids, std::span<const int32_t> targets, int64_t B, int64_t T) {
  tape_.clear();
  auto guard = tape_.no_grad();
  return model_->forward(tape_, ids, B, T, targets).loss.value()[0];
}

double Trainer::mean_loss(std::span<const int32_t> split, uint64_t seed) {
  BatchSampler s(split, config_.batch, config_.ctx, seed);
  std::vector<int32_t> ids, targets;
  double total = 0;
  for (int64_t i = 0; i < config_.eval_iters; ++i) {
    s.next(ids, targets);
    total += loss_on(ids, targets, config_.batch, config_.ctx);
  }
  return total / static_cast<double>(config_.eval_iters);
}

EvalResult Trainer::evaluate() {
  return {mean_loss(data_->val, val_seed(config_.seed)), mean_loss(data_->train, train_eval_seed(config_.seed))};
}

std::string load_text(const std::string& path) {
  if (path.empty()) return default_corpus();
  std::string text = io::read_file(path);
  check(!text.empty(), "training text '", path, "' is empty");
  return text;
}

std::shared_ptr<text::Tokenizer> build_tokenizer(const TrainConfig& config, const std::string& text,
                                                 const std::string& what) {
  if (config.tokenizer == "bpe") return std::make_shared<text::BpeTokenizer>(text::BpeTokenizer::train(text, config.vocab_size));
  if (const void* nul = std::memchr(text.data(), 0, text.size()))
    throw Error(cat(what, ": NUL byte at offset ", static_cast<const char*>(nul) - text.data(),
                    ": this looks like a binary file, not UTF-8 text (the bpe tokenizer accepts any bytes)"));
  text::decode(text, what);  // names the byte offset of invalid UTF-8
  return std::make_shared<text::CharTokenizer>(text::CharTokenizer::train(text));
}

std::shared_ptr<TokenData> make_token_data(const TrainConfig& config, const text::Tokenizer& tokenizer,
                                           const std::string& text) {
  return std::make_shared<TokenData>(split_tokens(tokenizer.encode(text), config.val_fraction, config.ctx));
}

}  // namespace tapegrad::lm
