#include "train_flags.h"

#include <CLI/CLI.hpp>
#include <filesystem>

#include "cli.h"

namespace tapegrad::cli {

using lm::TrainConfig;
using lm::qk_norm_names;

namespace {
// A flag whose value is a name parsed into a typed setting: CLI11 checks the choices, the setting
// is parsed once, and --help shows the default from the setting itself.
template <typename V, typename Parse>
CLI::Option* add_named_option(CLI::App& app, const std::string& flag, V& value, const std::vector<std::string>& choices,
                              Parse parse, const std::string& help, const std::string& type) {
  CLI::Option* o = app.add_option_function<std::string>(flag, [&value, parse](const std::string& name) { value = parse(name); }, help);
  return o->check(CLI::IsMember(choices))->default_str(nn::to_string(value))->type_name(type);
}
}  // namespace

CLI::Option* add_norm_option(CLI::App& app, const std::string& flag, nn::NormKind& value, const std::string& help) {
  return add_named_option(app, flag, value, nn::norm_names(), nn::NormKind::parse, help + "\n" + nn::norm_help(), "NORM");
}

void add_train_flags(CLI::App& app, TrainConfig& c, const std::set<std::string>& skip) {
  // Each flag is added through `opt`/`flag`, which honour `skip` and return a dummy option otherwise
  // discarded, so the chain of ->check()/->group() calls below stays readable.
  CLI::App sink;
  const auto opt = [&](const std::string& name, auto& value, const std::string& help) {
    return skip.count(name) ? sink.add_option("--" + name, value, help) : app.add_option("--" + name, value, help);
  };
  const auto flag = [&](const std::string& name, const std::string& names, bool& value, const std::string& help) {
    CLI::Option* o = skip.count(name) ? sink.add_flag(names, value, help) : app.add_flag(names, value, help);
    return o->default_str(value ? "true" : "false");
  };
  use_json_config(app);
  app.set_config("--config", "", "JSON file of flag values, e.g. a run's config.json (flags given here win)");
  // Stored absolute (config.json, checkpoints), so --config and --resume work from any folder.
  opt("data", c.data, "UTF-8 text file to train on (default: the embedded corpus)")
      ->transform([](std::string path) { return path.empty() ? path : std::filesystem::absolute(path).lexically_normal().string(); })
      ->group("Data");
  opt("tokenizer", c.tokenizer, "char or bpe")->check(CLI::IsMember({"char", "bpe"}))->group("Data");
  opt("vocab-size", c.vocab_size, "BPE vocabulary size (>= 256)")->group("Data");
  opt("val-fraction", c.val_fraction, "last fraction of the text held out for validation")->group("Data");
  opt("layers", c.layers, "transformer blocks")->group("Model");
  opt("heads", c.heads, "attention heads (must divide --dim)")->group("Model");
  opt("dim", c.dim, "model width C")->group("Model");
  opt("ctx", c.ctx, "context length T")->group("Model");
  const auto norm_opt = [&](const std::string& name, nn::NormKind& value, const std::string& help) {
    return add_norm_option(skip.count(name) ? sink : app, "--" + name, value, help);
  };
  norm_opt("norm", c.norm, "the norm of every block and before the LM head:")->group("Model");
  norm_opt("qk-norm", c.qk_norm, "normalise q and k per head (" + qk_norm_names() + "):")->group("Model");
  add_named_option(skip.count("placement") ? sink : app, "--placement", c.placement, nn::placement_names(),
                   nn::parse_placement, "where the norms sit: " + nn::placement_help(), "TEXT")->group("Model");
  add_named_option(skip.count("mlp") ? sink : app, "--mlp", c.mlp, {"gelu", "swiglu"}, nn::parse_mlp_kind, "gelu or swiglu",
                   "TEXT")->group("Model");
  opt("dyt-alpha", c.dyt_alpha, "DyT's initial alpha in tanh(alpha x) (with --norm dyt; other norms ignore it)")
      ->group("Model");
  flag("tie-head", "--tie-head,!--no-tie-head", c.tie_head, "share the token embedding with the LM head")->group("Model");
  flag("bias", "--bias,!--no-bias", c.bias, "biases in the linear layers")->group("Model");
  opt("optimizer", c.optimizer, "adamw or sgd")->check(CLI::IsMember({"adamw", "sgd"}))->group("Training");
  opt("batch", c.batch, "sequences per step B")->group("Training");
  opt("steps", c.steps, "training steps")->group("Training");
  opt("lr", c.lr, "peak learning rate")->group("Training");
  opt("min-lr", c.min_lr, "learning rate at the end of the cosine decay")->group("Training");
  opt("warmup", c.warmup, "linear warmup steps")->group("Training");
  opt("weight-decay", c.weight_decay, "decoupled weight decay (matrices only)")->group("Training");
  opt("beta1", c.beta1, "AdamW beta1")->group("Training");
  opt("beta2", c.beta2, "AdamW beta2")->group("Training");
  opt("momentum", c.momentum, "SGD momentum")->group("Training");
  opt("clip", c.clip, "global gradient-norm clip (0: off)")->group("Training");
  opt("z-loss", c.z_loss, "z-loss coefficient: adds z * logsumexp(logits)^2 per token, keeping output logits "
      "from drifting (PaLM: 1e-4; 0: off)")->group("Training");
  opt("seed", c.seed, "seed of the initialisation and the batches")->check(unsigned_integer())->group("Training");
  opt("threads", c.threads, "threads (0: one per core)")->group("Training");
  opt("eval-every", c.eval_every, "steps between evaluations (0: none)")->group("Evaluation");
  opt("eval-iters", c.eval_iters, "batches per evaluation")->group("Evaluation");
  opt("checkpoint-every", c.checkpoint_every, "steps between checkpoints (0: only at the end)")
      ->group("Evaluation");
  flag("instrument", "--instrument", c.instrument, "log per-layer residual/norm RMS, max logit, grad norms")
      ->group("Evaluation");
  opt("sharpness-every", c.sharpness_every, "measure the loss Hessian's top eigenvalue (and Adam's preconditioned "
      "one) every N steps, in float64 on a fixed batch (0: never)")->group("Evaluation");
  opt("sharpness-iters", c.sharpness_iters, "Lanczos steps per sharpness measurement, at most")->group("Evaluation");
  opt("sharpness-batch", c.sharpness_batch, "sequences in the sharpness batch (0: --batch)")->group("Evaluation");
}

}  // namespace tapegrad::cli
