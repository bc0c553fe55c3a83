// Trainer: one language-model training run — the model, its optimizer and schedule, the batch
// stream — advanced one step at a time, so train_lm, the lab and the tests drive it the same way.
//
// Determinism: the model is initialised from Rng(seed) and batches are drawn from their own
// generator seeded from `seed`; with the same seed and thread count, two runs produce the same
// losses bit for bit, and a run resumed from a checkpoint continues exactly as if never stopped.
//
// Data parallelism (a Communicator of N > 1 ranks): every rank holds the whole model and draws
// the same global batch of `batch` sequences; rank r trains on sequences [r B/N, (r+1) B/N).
// Each step copies every gradient, the local loss terms and a stop flag into one flat buffer and
// sums it with one allreduce (log Z's minimum takes a second, of one number); divided by N, those
// are the gradients and the loss of the global batch (the mean over equal slices is the mean over the batch). Clipping, the optimizer step and
// everything after see exactly what one process would — up to the order of float additions — so
// the replicas stay identical without ever exchanging weights.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "tapegrad/lm/batch_parallel.h"
#include "tapegrad/lm/communicator.h"
#include "tapegrad/lm/data.h"
#include "tapegrad/lm/instrument.h"
#include "tapegrad/nn/decoder.h"
#include "tapegrad/nn/language_model.h"
#include "tapegrad/optim/optimizer.h"
#include "tapegrad/optim/schedule.h"
#include "tapegrad/text/tokenizer.h"
#include "tapegrad/lm/train_config.h"

namespace tapegrad::lm {

struct StepResult {
  int64_t step = 0;  // the step just taken, from 1
  double loss = 0;   // the batch's cross-entropy (the objective is loss + z_loss)
  double z_loss = 0;  // the z-loss penalty of the batch (0 without --z-loss)
  double log_z_mean = 0, log_z_min = 0;  // log Z of the LM head over the batch's tokens
  double lr = 0, grad_norm = 0, step_ms = 0, tokens_per_s = 0;
  bool finite = true;  // false: NaN/Inf in the loss or the gradients; the update was skipped
  bool stop = false;   // some rank asked to stop after this step (see train_step)
  double comm_ms = 0;  // time in the step's allreduce (data-parallel runs)
  // Of step_ms, the instrumentation's statistics after backward and around the update
  // (config.instrument); its probes inside the forward pass are not separable from it.
  double instrument_ms = 0;
};

// Cross-entropy alone (the z-loss penalty is not a loss of the model), as eval_lm reports it;
// train_loss is NaN when the config does not estimate it (eval_train).
struct EvalResult {
  double val_loss = 0, train_loss = 0;
};

class Trainer {
 public:
  // `comm` may be null (one process). Throws if --batch does not divide among the ranks.
  Trainer(const TrainConfig& config, std::shared_ptr<const text::Tokenizer> tokenizer,
          std::shared_ptr<const TokenData> data, const Communicator* comm = nullptr);
  // Trains `model`, a language model of your own (nn/language_model.h), with the config's
  // training settings (batch, ctx, lr, schedule, optimizer, clip, accumulate, ...); the model
  // settings (dim, layers, norm, ...) describe the decoder and are not used. Null: the decoder the
  // config describes. Its forward runs on several threads at once (lm/batch_parallel.h). The
  // decoder's statistics (--instrument), sharpness and z-loss need the decoder: asked of another
  // model, they are a SettingError naming the setting and the model's type.
  Trainer(const TrainConfig& config, std::unique_ptr<nn::LanguageModel<float>> model,
          std::shared_ptr<const text::Tokenizer> tokenizer, std::shared_ptr<const TokenData> data,
          const Communicator* comm = nullptr);

  // One step. `request_stop` (e.g. a signal arrived) is combined over the ranks in the step's
  // allreduce: result.stop is true on every rank when any asked, so all stop at the same step.
  StepResult train_step(bool request_stop = false);
  // Mean loss over config.eval_iters batches of each split. The batches are the same at every
  // evaluation (a fixed seed), so successive evaluations — and runs with other norms — compare
  // on identical text. Module hooks run only with `hooks` (its forward calls are not the training
  // step a hook observes).
  EvalResult evaluate(bool hooks = false);
  // Mean cross-entropy of the model on the given batch, without recording a backward pass.
  double loss_on(std::span<const int32_t> ids, std::span<const int32_t> targets, int64_t B, int64_t T);

  int64_t step() const { return step_; }
  void set_step(int64_t s);
  // The run's settings, read-only: changing one under a running trainer would be silently
  // ignored (the model, optimizer and schedule are built from them).
  const TrainConfig& config() const { return config_; }
  // The learning-rate schedule (config.schedule over config.lr, min_lr, warmup and steps) and the
  // rate the next step will use. set_schedule replaces it from the next step on — a constant
  // rate, the user's own shape; it is not saved in checkpoints: set it again after resuming.
  const Schedule& schedule() const { return *schedule_; }
  void set_schedule(std::unique_ptr<Schedule> schedule);
  double lr() const { return schedule_->at(step_); }
  nn::LanguageModel<float>& model() { return *model_; }
  // The model as the decoder it is, or null for a model of your own.
  nn::Decoder<float>* decoder() { return decoder_; }
  // The decoder; an Error saying that `what` needs one when the model is another.
  nn::Decoder<float>& decoder(const char* what);
  Optimizer<float>& optimizer() { return *optimizer_; }
  const text::Tokenizer& tokenizer() const { return *tokenizer_; }
  const std::shared_ptr<const text::Tokenizer>& tokenizer_ptr() const { return tokenizer_; }
  BatchSampler& sampler() { return sampler_; }
  // The global batch of the last step (B x T, row-major), and before the first step under
  // config.full_batch the batch every step trains on.
  std::span<const int32_t> batch_ids() const { return ids_; }
  std::span<const int32_t> batch_targets() const { return targets_; }
  const TokenData& data() const { return *data_; }
  // The statistics of the last step (config.instrument), or null when not instrumenting.
  const StepStats* last_stats() const { return instrument_ ? &instrument_->stats() : nullptr; }
  double last_global_grad_norm() const { return last_grad_norm_; }  // before clipping
  const std::vector<Parameter<float>*>& params() const { return params_; }
  Tape<float>& tape() { return tape_; }

 private:
  // One call of train_step, evaluate or loss_on runs to its end before the trainer is used again:
  // a module hook, a norm written in Python or any callback inside it that calls back into the
  // trainer (another step, an evaluation, a new schedule or step count) would clear the tapes and
  // buffers the running call is using, so it is an Error naming both calls.
  class Running;
  void check_not_running(const char* what) const;
  const char* running_ = nullptr;  // the call in progress

  double loss_on_tape(std::span<const int32_t> ids, std::span<const int32_t> targets, int64_t B, int64_t T);
  void check_model_of_your_own() const;
  double mean_loss(std::span<const int32_t> split, uint64_t seed);
  // Forward and backward of this rank's batch in config.accumulate micro-batches.
  CrossEntropyTerms accumulate(std::span<const int32_t> ids, std::span<const int32_t> targets, int64_t B, int64_t T);

  TrainConfig config_;
  std::shared_ptr<const text::Tokenizer> tokenizer_;
  std::shared_ptr<const TokenData> data_;
  std::unique_ptr<nn::LanguageModel<float>> model_;
  nn::Decoder<float>* decoder_ = nullptr;  // model_, when it is the decoder
  std::vector<Parameter<float>*> params_;
  std::unique_ptr<Optimizer<float>> optimizer_;
  std::unique_ptr<Schedule> schedule_;
  BatchSampler sampler_;
  Tape<float> tape_;  // evaluation
  std::unique_ptr<BatchParallelStep<float>> batch_parallel_;  // training steps: the batch split over the threads
  std::vector<int32_t> ids_, targets_;
  std::unique_ptr<Instrument> instrument_;
  std::vector<double> grad_squares_;  // |g|^2 per parameter, from the global norm, for the instrument
  std::vector<nn::DecoderProbe> micro_probes_;  // per micro-batch, with config.accumulate > 1
  std::vector<double> micro_weights_;
  const Communicator* comm_ = nullptr;
  std::vector<float> flat_;  // gradients + loss + stop flag, for the one allreduce per step
  double last_grad_norm_ = 0;
  int64_t step_ = 0;
};

// The optimizer the config asks for (--optimizer, its betas, momentum and weight decay) over `params`.
std::unique_ptr<Optimizer<float>> optimizer_for(const TrainConfig& config, std::vector<Parameter<float>*> params);

// The learning-rate schedule the config asks for (--schedule over --lr, --min-lr, --warmup, --steps).
std::unique_ptr<Schedule> schedule_for(const TrainConfig& config);

// Reads the training text: `path`, or the embedded corpus when empty. Errors name the file.
std::string load_text(const std::string& path);
// Builds the tokenizer the config asks for from `text`.
std::shared_ptr<text::Tokenizer> build_tokenizer(const TrainConfig& config, const std::string& text,
                                                 const std::string& what);
// Encodes `text` and splits it (90/10 by default).
std::shared_ptr<TokenData> make_token_data(const TrainConfig& config, const text::Tokenizer& tokenizer,
                                           const std::string& text);

}  // namespace tapegrad::lm
