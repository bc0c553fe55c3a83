#include "tapegrad/lm/trainer.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "tapegrad/lm/usage_error.h"
#include "tapegrad/lm/corpus.h"
#include "tapegrad/io/file.h"
#include "tapegrad/io/sha256.h"
#include "tapegrad/optim/clip.h"
#include "tapegrad/optim/registry.h"
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

std::unique_ptr<Optimizer<float>> optimizer_for(const TrainConfig& c, std::vector<Parameter<float>*> params) {
  return make_optimizer(c.optimizer, std::move(params),
                        {.beta1 = c.beta1, .beta2 = c.beta2, .eps = 1e-8, .momentum = c.momentum,
                         .weight_decay = {c.weight_decay, parse_weight_decay_mode(c.weight_decay_mode), c.lr}});
}

std::unique_ptr<Schedule> schedule_for(const TrainConfig& c) {
  return make_schedule(c.schedule, {.lr = c.lr, .min_lr = c.min_lr, .warmup = c.warmup, .total = c.steps});
}

class Trainer::Running {
 public:
  Running(Trainer& t, const char* what) : t_(t) {
    t.check_not_running(what);
    t.running_ = what;
  }
  ~Running() { t_.running_ = nullptr; }
  Running(const Running&) = delete;
  Running& operator=(const Running&) = delete;

 private:
  Trainer& t_;
};

void Trainer::check_not_running(const char* what) const {
  check(running_ == nullptr, "Trainer::", what, ": called while this trainer's ", running_ == nullptr ? "" : running_,
        " is running (from a module hook or a callback inside it); call it after that returns");
}

void Trainer::set_schedule(std::unique_ptr<Schedule> schedule) {
  check_not_running("set_schedule");
  check(schedule != nullptr, "Trainer::set_schedule: the schedule is null");
  schedule_ = std::move(schedule);
}

void Trainer::set_step(int64_t s) {
  check_not_running("set_step");
  step_ = s;
}

Trainer::Trainer(const TrainConfig& config, std::shared_ptr<const text::Tokenizer> tokenizer,
                 std::shared_ptr<const TokenData> data, const Communicator* comm)
    : Trainer(config, nullptr, std::move(tokenizer), std::move(data), comm) {}

Trainer::Trainer(const TrainConfig& config, std::unique_ptr<nn::LanguageModel<float>> model,
                 std::shared_ptr<const text::Tokenizer> tokenizer, std::shared_ptr<const TokenData> data,
                 const Communicator* comm)
    : config_(config),
      tokenizer_(std::move(tokenizer)),
      data_(std::move(data)),
      sampler_(data_->train, config.batch, config.model.ctx, data_seed(config.seed)),
      comm_(comm && comm->distributed() ? comm : nullptr) {
  config_.validate();
  const int ranks = comm_ ? comm_->size() : 1;
  if (config_.batch % ranks != 0)
    throw SettingError(cat("{batch} ", config_.batch, " does not divide among the ", ranks,
                         " ranks: the global batch is split evenly, so use a multiple of ", ranks));
  // Ranks on one machine share its cores: one OpenMP pool each, never oversubscribed.
  set_num_threads(config_.threads > 0 ? config_.threads
                                      : std::max(1, num_cores() / (comm_ ? comm_->local_size() : 1)));
  if (model) {
    model_ = std::move(model);
    check_model_of_your_own();
  } else {
    model_ = std::make_unique<nn::Decoder<float>>(config_.model_for(tokenizer_->vocab_size()), config_.seed);
  }
  decoder_ = dynamic_cast<nn::Decoder<float>*>(model_.get());
  params_ = model_->parameters();
  batch_parallel_ = std::make_unique<BatchParallelStep<float>>(*model_, params_);
  optimizer_ = optimizer_for(config_, params_);
  schedule_ = schedule_for(config_);
  if (config_.instrument) {
    instrument_ = std::make_unique<Instrument>(*decoder_, params_);
    grad_squares_.resize(params_.size());
  }
  // Full batch: the batch a mini-batch run would train on first, drawn by a generator of its own
  // so that a resumed run (whose sampler state is restored) trains on the same sequences.
  if (config_.full_batch) BatchSampler(data_->train, config_.batch, config_.model.ctx, data_seed(config_.seed)).next(ids_, targets_);
  if (comm_) {
    int64_t n = 4;  // loss, stop flag, z-loss, mean log Z
    for (const Parameter<float>* p : params_) n += p->numel();
    flat_.resize(static_cast<size_t>(n));
  }
}

void Trainer::check_model_of_your_own() const {
  const nn::LanguageModel<float>& m = *model_;
  if (dynamic_cast<const nn::Decoder<float>*>(&m)) return;  // a decoder built by the caller: all settings apply
  const std::string type = m.type_name();
  check(m.vocab_size() == tokenizer_->vocab_size(), type, "'s vocab_size() is ", m.vocab_size(), ", the tokenizer has ",
        tokenizer_->vocab_size(), " tokens");
  if (config_.model.ctx > m.ctx())
    throw SettingError(cat("{ctx} ", config_.model.ctx, " exceeds the ", m.ctx(), " positions ", type, "::ctx() accepts"));
  const auto needs_decoder = [&](bool asked, const char* key) {
    if (asked) throw SettingError(cat("{", key, "} needs tapegrad's decoder; the model is a ", type));
  };
  needs_decoder(config_.instrument, "instrument");
  needs_decoder(config_.sharpness_every > 0, "sharpness-every");
  if (config_.model.z_loss != 0)
    throw SettingError(cat("{z-loss} is added by tapegrad's decoder; a ", type,
                           " adds it in its own forward (nn::lm_output(logits, targets, z_loss))"));
}

nn::Decoder<float>& Trainer::decoder(const char* what) {
  check(decoder_ != nullptr, what, " needs tapegrad's decoder; this trainer's model is a ", model_->type_name());
  return *decoder_;
}

StepResult Trainer::train_step(bool request_stop) {
  const Running running(*this, "train_step");
  const auto t0 = std::chrono::steady_clock::now();
  if (!config_.full_batch) sampler_.next(ids_, targets_);  // the global batch: the same on every rank
  const int64_t ranks = comm_ ? comm_->size() : 1, rank = comm_ ? comm_->rank() : 0;
  const int64_t B = config_.batch / ranks, T = config_.model.ctx;
  const std::span<const int32_t> ids(ids_.data() + rank * B * T, static_cast<size_t>(B * T));
  const std::span<const int32_t> targets(targets_.data() + rank * B * T, static_cast<size_t>(B * T));
  StepResult r;  // accumulate() writes every gradient afresh: no zero_grad() first
  const CrossEntropyTerms terms = accumulate(ids, targets, B, T);
  r.loss = terms.cross_entropy, r.z_loss = terms.z_loss;
  r.log_z_mean = terms.log_z_mean, r.log_z_min = terms.log_z_min;
  r.stop = request_stop;
  if (comm_) {  // one allreduce: every gradient, the loss terms and the stop flag
    float* f = flat_.data();
    for (const Parameter<float>* p : params_) f = std::copy_n(p->grad().data(), p->numel(), f);
    f[0] = static_cast<float>(r.loss);
    f[1] = request_stop ? 1.f : 0.f;
    f[2] = static_cast<float>(r.z_loss);
    f[3] = static_cast<float>(r.log_z_mean);
    const auto c0 = std::chrono::steady_clock::now();
    comm_->allreduce_sum(flat_.data(), static_cast<int64_t>(flat_.size()));
    comm_->allreduce_min(&r.log_z_min, 1);
    r.comm_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c0).count();
    const float inv = 1.f / static_cast<float>(ranks);
    const float* g = flat_.data();
    for (Parameter<float>* p : params_) {
      float* dst = p->grad().data();
      for (int64_t i = 0; i < p->numel(); ++i) dst[i] = g[i] * inv;
      g += p->numel();
    }
    r.loss = static_cast<double>(g[0]) / static_cast<double>(ranks);
    r.stop = g[1] > 0;
    r.z_loss = static_cast<double>(g[2]) / static_cast<double>(ranks);
    r.log_z_mean = static_cast<double>(g[3]) / static_cast<double>(ranks);
  }
  const auto ms_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
  };
  // With the instrument, the global norm hands out its per-parameter sums for the per-layer ones.
  r.grad_norm = last_grad_norm_ = grad_norm<float>(params_, instrument_ ? std::span<double>(grad_squares_) : std::span<double>());
  if (instrument_) {
    const auto i0 = std::chrono::steady_clock::now();
    instrument_->after_backward(grad_squares_);
    r.instrument_ms += ms_since(i0);
  }
  r.lr = schedule_->at(step_);
  r.finite = std::isfinite(r.loss) && std::isfinite(r.z_loss) && std::isfinite(r.grad_norm);
  if (r.finite) {  // never write NaN/Inf into the weights
    const double scale = clip_factor(r.grad_norm, config_.clip);  // clipping folded into the update
    if (instrument_) {  // the update sizes from the optimizer's own pass (counted as the step's)
      const auto i0 = std::chrono::steady_clock::now();
      const std::span<double> sizes = instrument_->before_update();
      r.instrument_ms += ms_since(i0);
      optimizer_->step_measured(r.lr, scale, sizes);
      const auto i1 = std::chrono::steady_clock::now();
      instrument_->after_update();
      r.instrument_ms += ms_since(i1);
    } else {
      optimizer_->step(r.lr, scale);
    }
  }
  r.step = ++step_;
  r.step_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  r.tokens_per_s = static_cast<double>(config_.batch * config_.model.ctx) / (r.step_ms / 1000.0);
  return r;
}

CrossEntropyTerms Trainer::accumulate(std::span<const int32_t> ids, std::span<const int32_t> targets, int64_t B, int64_t T) {
  nn::DecoderProbe* probe = instrument_ ? instrument_->probe() : nullptr;
  const int64_t n = std::min(config_.accumulate, B);
  if (n == 1) return batch_parallel_->forward_backward(ids, targets, B, T, probe, 1.0, /*add=*/false);
  // Micro-batch m holds sequences [B m / n, B (m + 1) / n) and weighs b_m / B in the batch's mean:
  // its gradient enters with that scale, its loss terms and statistics with that weight.
  CrossEntropyTerms terms{.log_z_min = std::numeric_limits<double>::infinity()};
  micro_probes_.resize(static_cast<size_t>(n));
  micro_weights_.resize(static_cast<size_t>(n));
  for (int64_t m = 0; m < n; ++m) {
    const int64_t begin = B * m / n, end = B * (m + 1) / n, b = end - begin;
    const double w = static_cast<double>(b) / static_cast<double>(B);
    const auto part = [&](std::span<const int32_t> all) {
      return all.subspan(static_cast<size_t>(begin * T), static_cast<size_t>(b * T));
    };
    const CrossEntropyTerms t = batch_parallel_->forward_backward(
        part(ids), part(targets), b, T, probe ? &micro_probes_[static_cast<size_t>(m)] : nullptr, w, /*add=*/m > 0);
    terms.cross_entropy += w * t.cross_entropy, terms.z_loss += w * t.z_loss, terms.log_z_mean += w * t.log_z_mean;
    if (!(t.log_z_min >= terms.log_z_min)) terms.log_z_min = t.log_z_min;  // NaN propagates
    micro_weights_[static_cast<size_t>(m)] = w;
  }
  if (probe) nn::combine_probes(micro_probes_, micro_weights_, *probe);
  return terms;
}

double Trainer::loss_on(std::span<const int32_t> ids, std::span<const int32_t> targets, int64_t B, int64_t T) {
  const Running running(*this, "loss_on");
  return loss_on_tape(ids, targets, B, T);
}

double Trainer::loss_on_tape(std::span<const int32_t> ids, std::span<const int32_t> targets, int64_t B, int64_t T) {
  tape_.clear();
  auto guard = tape_.no_grad();
  const auto out = model_->forward(tape_, ids, B, T, targets);
  // As the tape's float holds it, like the training step's loss: without a z-loss, the taped value.
  return static_cast<float>(out.terms.cross_entropy);
}

double Trainer::mean_loss(std::span<const int32_t> split, uint64_t seed) {
  // Under data parallelism rank r evaluates batches r, r + N, ...; the sum is reduced below.
  const int64_t ranks = comm_ ? comm_->size() : 1, rank = comm_ ? comm_->rank() : 0;
  BatchSampler s(split, config_.batch, config_.model.ctx, seed);
  std::vector<int32_t> ids, targets;
  double total = 0;
  for (int64_t i = 0; i < config_.eval_iters; ++i) {
    s.next(ids, targets);  // every rank draws every batch, so batch i is the same on all of them
    if (i % ranks == rank) total += loss_on_tape(ids, targets, config_.batch, config_.model.ctx);
  }
  return total;
}

EvalResult Trainer::evaluate(bool hooks) {
  const Running running(*this, "evaluate");
  std::optional<nn::HooksOff> off;
  if (!hooks) off.emplace();
  double sums[2] = {mean_loss(data_->val, val_seed(config_.seed)),
                    config_.eval_train ? mean_loss(data_->train, train_eval_seed(config_.seed)) : 0.0};
  if (comm_) comm_->allreduce_sum(sums, 2);
  const double n = static_cast<double>(config_.eval_iters);
  return {sums[0] / n, config_.eval_train ? sums[1] / n : std::numeric_limits<double>::quiet_NaN()};
}

std::string load_text(const std::string& path) {
  if (path.empty()) return default_corpus();
  std::string text = io::read_file(path);
  check(!text.empty(), "training text '", path, "' is empty");
  return text;
}

std::shared_ptr<text::Tokenizer> build_tokenizer(const TrainConfig& config, const std::string& text,
                                                 const std::string& what) {
  return text::train_tokenizer(config.tokenizer, text, config.vocab_size, what);
}

std::shared_ptr<TokenData> make_token_data(const TrainConfig& config, const text::Tokenizer& tokenizer,
                                           const std::string& text) {
  auto data = std::make_shared<TokenData>(split_tokens(tokenizer.encode(text), config.val_fraction, config.model.ctx));
  data->text_bytes = static_cast<int64_t>(text.size());
  data->text_sha256 = io::sha256_hex(text);
  return data;
}

}  // namespace tapegrad::lm
