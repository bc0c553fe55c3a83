// Checkpoints: a run directory holds
//   model.safetensors      the weights, named as Decoder::named_parameters() (PyTorch layouts)
//   optimizer.safetensors  the optimizer's moments ("exp_avg.<param>", "exp_avg_sq.<param>")
//   checkpoint.json        model config (or a model of the user's own by type), training config, tokenizer, step, the batch generator's
//                          state (the data position), the training text's size and SHA-256, and
//                          the SHA-256 of both .safetensors files
//
// Saving is crash-safe although three files change: each is first written (atomically) as
// "<name>.new", then the three are renamed into place, checkpoint.json last. Loading finishes a
// commit that a crash interrupted (all .new files present and matching the new checkpoint.json)
// and otherwise ignores the leftovers; then it verifies both hashes, every tensor's name, dtype
// and shape against the config, so a damaged or mismatched checkpoint is an error, never garbage.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tapegrad/nn/decoder.h"
#include "tapegrad/text/tokenizer.h"
#include "tapegrad/lm/trainer.h"

namespace tapegrad::lm {

// The run's checkpoint in `dir` (created if missing), crash-safe. Takes dir's RunLock for the
// save: a folder another writer holds is an Error naming it (the thread holding it may save).
void save_checkpoint(Trainer& trainer, const std::string& dir);

// What may change when a run is resumed: the length of the run, and settings that do not touch
// the training trajectory. (The thread count changes nothing but speed, except that bitwise
// reproduction of the losses needs the same count.) Unset fields keep the saved values.
struct ResumeOverrides {
  std::optional<int64_t> steps{}, eval_every{}, eval_iters{}, checkpoint_every{};
  std::optional<int> threads{};
  // The text to train on, for a run started from a string rather than a file (its config names
  // no file, so resuming would otherwise read the embedded corpus).
  std::optional<std::string> text{};
  // Checkpoints record the training text's size and SHA-256, and a resume on other text is an
  // Error; true continues on the text as it is now (e.g. a corpus fixed or extended on purpose).
  bool allow_data_change = false;
  // Builds the model of a run that trained a model of the user's own (its weights are then loaded
  // from the checkpoint); a checkpoint of such a run cannot be resumed without it.
  std::function<std::unique_ptr<nn::LanguageModel<float>>()> model{};
};

// A trainer in the state of the checkpoint in `dir`: same config (with the overrides),
// tokenizer, weights, optimizer moments, step and data position.
// With a communicator of N ranks the run continues data-parallel; N may differ from the run's
// earlier N (the checkpoint holds the global state only).
std::unique_ptr<Trainer> resume_trainer(const std::string& dir, const ResumeOverrides& overrides = {},
                                        const Communicator* comm = nullptr);

// The model and tokenizer only (for sampling and evaluation).
struct LoadedModel {
  nlohmann::json checkpoint;  // the parsed checkpoint.json
  TrainConfig config;
  std::shared_ptr<text::Tokenizer> tokenizer;
  std::unique_ptr<nn::Decoder<float>> model;
};
LoadedModel load_model(const std::string& dir);
// The run's optimizer over m.model's parameters, with the checkpoint's moments and step count
// (for what needs its state, such as Adam's preconditioned sharpness).
std::unique_ptr<Optimizer<float>> load_optimizer(const std::string& dir, LoadedModel& m);

}  // namespace tapegrad::lm
