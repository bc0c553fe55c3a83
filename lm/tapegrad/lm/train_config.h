// TrainConfig: every knob of a training run, typed (a norm is an nn::NormKind, parsed once at the
// boundary). Each field is a row of the settings table (settings.h), which gives its flag and JSON
// key (`--min-lr` <-> "min-lr"), help, range and role: a run's config.json fed back with --config
// reproduces it.
#pragma once

#include <functional>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tapegrad/nn/decoder_config.h"

namespace tapegrad::lm {

struct TrainConfig {
  // data
  std::string data;               // a UTF-8 text file; empty: the embedded corpus
  std::string tokenizer = "char";  // char | bpe
  int64_t vocab_size = 512;        // bpe only
  double val_fraction = 0.1;
  // The model: every architecture knob (and the objective's z_loss), its own table of settings
  // (nn::decoder_fields()). Its vocab_size is the tokenizer's, set when the model is built.
  nn::DecoderConfig model;
  std::string recipe = "none";  // a published recipe (recipes.h): sets the settings above as its paper does
  // optimisation
  std::string optimizer = "adamw";  // a registered optimizer (optim/registry.h)
  std::string schedule = "cosine";  // a registered learning-rate schedule (optim/schedule.h)
  std::string weight_decay_mode = "lr-scaled";  // lr-scaled | independent (optim/optimizer.h)
  int64_t batch = 12, steps = 2000, warmup = 100;
  // Gradient accumulation: each step's batch runs as this many micro-batches, one after another,
  // their gradients summed before the one update (the activations of batch / accumulate sequences
  // are held at a time). The update is the whole batch's, up to float rounding.
  int64_t accumulate = 1;
  // Every step on the same `batch` sequences, drawn once: full-batch gradient descent on that
  // subset of the training text (Cohen et al. 2021 train so), the loss the sharpness then measures.
  bool full_batch = false;
  double lr = 1e-3, min_lr = 1e-4, weight_decay = 0.1, beta1 = 0.9, beta2 = 0.99, momentum = 0.9, clip = 1.0;
  uint64_t seed = 1337;
  int threads = 0;  // 0: one per core
  // evaluation, logging, checkpoints
  int64_t eval_every = 250;  // 0: no evaluation
  int64_t eval_iters = 200;
  // Each evaluation also estimates the training split's loss on eval_iters batches of it (the
  // generalisation gap); off, an evaluation is half the forwards and its train_loss is NaN.
  bool eval_train = true;
  int64_t checkpoint_every = 500;  // 0: only at the end
  bool instrument = false;         // per-layer statistics in metrics.jsonl (see the lab)
  // Edge-of-stability measurements (sharpness.h): every N steps (0: never), at most `iters` Lanczos
  // steps, on a fixed batch of `batch` sequences (0: the training batch size). They read the
  // weights and change nothing in the run.
  int64_t sharpness_every = 0, sharpness_iters = 20, sharpness_batch = 0;
  // ... and at each measurement the batch sharpness of K fresh training batches (0: not measured).
  int64_t batch_sharpness = 0;

  // The model to build for a tokenizer of `vocab` tokens: `model` with that vocab_size.
  nn::DecoderConfig model_for(int64_t vocab) const;
  // Throws a SettingError naming the flag and value for anything out of range or inconsistent:
  // each row's checks, then every relation of severity kError (setting_relations()).
  void validate() const;
  // The relations of severity kWarning that these settings break, as messages naming each setting
  // as {key} (render_settings turns them into flags or keywords): train_lm and compare_norms print
  // them, Python raises them as tapegrad.SettingWarning.
  std::vector<std::string> warnings() const;
};

// A rule between settings that no single row of the settings table can state ("heads divides
// dim", "warmup is shorter than steps"). One table, so that a rewrite cannot drop one silently:
// validate() and warnings() run it, and a test applies every row's `example` (settings that break
// it) and requires its message.
struct SettingRelation {
  enum class Severity { kError, kWarning };
  std::string name;
  Severity severity;
  nlohmann::json example;  // settings (keys of the table) that break the rule, over the defaults
  std::function<std::string(const TrainConfig&)> check;  // "" when the rule holds, else the message
};
using Severity = SettingRelation::Severity;
const std::vector<SettingRelation>& setting_relations();

nlohmann::json to_json(const TrainConfig& c);
// Keys as the flags; unknown keys and wrong types are errors naming the key.
TrainConfig train_config_from_json(const nlohmann::json& j);

// Checkpoints store the architecture once, as the model's DecoderConfig: their "train" section
// leaves out the keys the model config owns (the settings marked in_model), and reading fills
// them back in from it. A section that still has them
// (checkpoints written before) is read as it is; the caller checks it against the model config.
nlohmann::json without_model_fields(nlohmann::json train);
TrainConfig train_config_from_json(const nlohmann::json& train, const nn::DecoderConfig& model);


}  // namespace tapegrad::lm
