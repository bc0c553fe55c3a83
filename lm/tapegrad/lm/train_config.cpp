#include "tapegrad/lm/train_config.h"

#include <cmath>
#include <limits>

#include "tapegrad/lm/usage_error.h"
#include "tapegrad/error.h"
#include "tapegrad/io/json_field.h"

namespace tapegrad::lm {

nn::DecoderConfig TrainConfig::model(int64_t vocab) const {
  nn::DecoderConfig m;
  m.vocab_size = vocab;
  m.context = ctx;
  m.n_layer = layers;
  m.n_head = heads;
  m.dim = dim;
  m.norm = norm;
  m.qk_norm = qk_norm;
  m.placement = placement;
  m.mlp = mlp;
  m.tie_head = tie_head;
  m.bias = bias;
  m.z_loss = z_loss;
  m.dyt_alpha = dyt_alpha;
  return m;
}

namespace {
// check() for flag values: a failure is a usage error (exit status 2).
template <typename... Args>
void check_flag(bool ok, Args&&... args) {
  if (!ok) throw UsageError(cat(std::forward<Args>(args)...));
}
}  // namespace

void TrainConfig::validate() const {
  const auto positive = [](const char* flag, auto v) { check_flag(v > 0, "--", flag, " must be positive, got ", v); };
  positive("layers", layers), positive("heads", heads), positive("dim", dim), positive("ctx", ctx);
  positive("batch", batch), positive("steps", steps), positive("lr", lr), positive("eval-iters", eval_iters);
  check_flag(dim % heads == 0, "--heads ", heads, " does not divide --dim ", dim);
  // Bounds far above anything trainable here, so that every product of sizes downstream (tokens
  // per step, parameter counts, FLOP estimates) stays far inside 64 bits.
  const auto at_most = [](const char* flag, int64_t v, int64_t max) {
    check_flag(v <= max, "--", flag, " ", v, " is too large (at most ", max, ")");
  };
  at_most("layers", layers, 4096), at_most("heads", heads, 4096), at_most("dim", dim, int64_t{1} << 16);
  at_most("ctx", ctx, int64_t{1} << 20), at_most("batch", batch, int64_t{1} << 20);
  at_most("vocab-size", vocab_size, int64_t{1} << 24), at_most("steps", steps, int64_t{1} << 40);
  at_most("warmup", warmup, int64_t{1} << 40), at_most("eval-iters", eval_iters, int64_t{1} << 30);
  at_most("eval-every", eval_every, int64_t{1} << 40), at_most("checkpoint-every", checkpoint_every, int64_t{1} << 40);
  check_flag(batch * ctx <= int64_t{1} << 28, "--batch ", batch, " x --ctx ", ctx,
             " is too many tokens per step (at most 2^28)");
  for (const auto& [flag, v] : {std::pair{"lr", lr}, {"min-lr", min_lr}, {"weight-decay", weight_decay}, {"clip", clip},
                                {"val-fraction", val_fraction}, {"z-loss", z_loss},
                                {"dyt-alpha", dyt_alpha}})
    check_flag(std::isfinite(v), "--", flag, " must be a finite number, got ", v);
  check_flag(min_lr >= 0 && min_lr <= lr, "--min-lr must be in [0, --lr], got ", min_lr);
  check_flag(warmup >= 0, "--warmup must be >= 0, got ", warmup);
  check_flag(weight_decay >= 0, "--weight-decay must be >= 0, got ", weight_decay);
  check_flag(beta1 >= 0 && beta1 < 1, "--beta1 must be in [0, 1), got ", beta1);
  check_flag(beta2 >= 0 && beta2 < 1, "--beta2 must be in [0, 1), got ", beta2);
  check_flag(momentum >= 0 && momentum < 1, "--momentum must be in [0, 1), got ", momentum);
  check_flag(clip >= 0, "--clip must be >= 0 (0 disables clipping), got ", clip);
  check_flag(z_loss >= 0 && z_loss <= 1, "--z-loss must be in [0, 1] (0: off; PaLM uses 1e-4), got ", z_loss);
  check_flag(dyt_alpha > 0 && dyt_alpha <= 100, "--dyt-alpha must be in (0, 100], got ", dyt_alpha);
  // The model holds alpha in float32: a value that rounds to 0 or a subnormal there is refused.
  check_flag(static_cast<float>(dyt_alpha) >= std::numeric_limits<float>::min(), "--dyt-alpha ", dyt_alpha,
             " rounds to ", static_cast<float>(dyt_alpha), " in float32, the model's precision: use at least ",
             std::numeric_limits<float>::min());
  check_flag(threads >= 0, "--threads must be >= 0 (0: one per core), got ", threads);
  check_flag(eval_every >= 0 && checkpoint_every >= 0, "--eval-every and --checkpoint-every must be >= 0");
  check_flag(sharpness_every >= 0, "--sharpness-every must be >= 0 (0: never), got ", sharpness_every);
  at_most("sharpness-every", sharpness_every, int64_t{1} << 40);
  check_flag(sharpness_iters >= 1 && sharpness_iters <= 1000, "--sharpness-iters must be in [1, 1000], got ",
             sharpness_iters);
  check_flag(sharpness_batch >= 0, "--sharpness-batch must be >= 0 (0: --batch), got ", sharpness_batch);
  at_most("sharpness-batch", sharpness_batch, int64_t{1} << 20);
  check_flag(sharpness_batch * ctx <= int64_t{1} << 28, "--sharpness-batch ", sharpness_batch, " x --ctx ", ctx,
             " is too many tokens per measurement (at most 2^28)");
  check_flag(val_fraction > 0 && val_fraction < 1, "--val-fraction must be in (0, 1), got ", val_fraction);
  check_flag(tokenizer == "char" || tokenizer == "bpe", "--tokenizer must be char or bpe, got '", tokenizer, "'");
  check_flag(tokenizer != "bpe" || vocab_size >= 256, "--vocab-size ", vocab_size,
        " is smaller than the 256-byte alphabet of the bpe tokenizer");
  check_flag(optimizer == "adamw" || optimizer == "sgd", "--optimizer must be adamw or sgd, got '", optimizer, "'");
  check_flag(qk_norm.can_be_qk_norm(), "--qk-norm ", qk_norm.name(),
             ": this norm has no row kernels for QK-norm; choose one of ", qk_norm_names());
}

nlohmann::json to_json(const TrainConfig& c) {
  return {{"data", c.data},
          {"tokenizer", c.tokenizer},
          {"vocab-size", c.vocab_size},
          {"val-fraction", c.val_fraction},
          {"layers", c.layers},
          {"heads", c.heads},
          {"dim", c.dim},
          {"ctx", c.ctx},
          {"norm", nn::to_string(c.norm)},
          {"qk-norm", nn::to_string(c.qk_norm)},
          {"placement", nn::to_string(c.placement)},
          {"mlp", nn::to_string(c.mlp)},
          {"tie-head", c.tie_head},
          {"bias", c.bias},
          {"optimizer", c.optimizer},
          {"batch", c.batch},
          {"steps", c.steps},
          {"warmup", c.warmup},
          {"lr", c.lr},
          {"min-lr", c.min_lr},
          {"weight-decay", c.weight_decay},
          {"beta1", c.beta1},
          {"beta2", c.beta2},
          {"momentum", c.momentum},
          {"clip", c.clip},
          {"z-loss", c.z_loss},
          {"dyt-alpha", c.dyt_alpha},
          {"seed", c.seed},
          {"threads", c.threads},
          {"eval-every", c.eval_every},
          {"eval-iters", c.eval_iters},
          {"checkpoint-every", c.checkpoint_every},
          {"instrument", c.instrument},
          {"sharpness-every", c.sharpness_every},
          {"sharpness-iters", c.sharpness_iters},
          {"sharpness-batch", c.sharpness_batch}};
}

namespace {
template <typename V>
void read(const nlohmann::json& j, const char* key, V& out) {
  io::read_field(j, key, out, "training config");
}
// A typed field stored by name ("layernorm", "post", "swiglu"): parsed once, here.
template <typename V, typename Parse>
void read_named(const nlohmann::json& j, const char* key, V& out, Parse parse) {
  if (!j.contains(key)) return;
  std::string name;
  io::read_field(j, key, name, "training config");
  try {
    out = parse(name);
  } catch (const Error& e) {
    throw Error(cat("training config: '", key, "': ", e.what()));
  }
}
void read(const nlohmann::json& j, const char* key, nn::NormKind& out) { read_named(j, key, out, nn::NormKind::parse); }
void read(const nlohmann::json& j, const char* key, nn::Placement& out) { read_named(j, key, out, nn::parse_placement); }
void read(const nlohmann::json& j, const char* key, nn::MlpKind& out) { read_named(j, key, out, nn::parse_mlp_kind); }

// The training-config keys a DecoderConfig owns, with its values: the one list of them.
nlohmann::json model_fields(const nn::DecoderConfig& m) {
  return {{"layers", m.n_layer},
          {"heads", m.n_head},
          {"dim", m.dim},
          {"ctx", m.context},
          {"norm", nn::to_string(m.norm)},
          {"qk-norm", nn::to_string(m.qk_norm)},
          {"placement", nn::to_string(m.placement)},
          {"mlp", nn::to_string(m.mlp)},
          {"tie-head", m.tie_head},
          {"bias", m.bias},
          {"z-loss", m.z_loss},
          {"dyt-alpha", m.dyt_alpha}};
}
}  // namespace

nlohmann::json without_model_fields(nlohmann::json train) {
  const nlohmann::json keys = model_fields(nn::DecoderConfig{});  // named: items() would dangle on a temporary
  for (const auto& [key, value] : keys.items()) train.erase(key);
  return train;
}

TrainConfig train_config_from_json(const nlohmann::json& train, const nn::DecoderConfig& m) {
  check(train.is_object(), "training config: expected a JSON object");
  nlohmann::json j = train;
  const nlohmann::json fields = model_fields(m);  // named: items() would dangle on a temporary
  for (const auto& [key, value] : fields.items())
    if (!j.contains(key)) j[key] = value;
  return train_config_from_json(j);
}

std::string qk_norm_names() {
  std::string names;
  for (const nn::NormKind k : nn::qk_norms()) names += cat(names.empty() ? "" : ", ", k.name());
  return names;
}

TrainConfig train_config_from_json(const nlohmann::json& j) {
  check(j.is_object(), "training config: expected a JSON object");
  TrainConfig c;
  const nlohmann::json known = to_json(c);
  for (const auto& [key, value] : j.items()) check(known.contains(key), "training config: unknown key '", key, "'");
  read(j, "data", c.data), read(j, "tokenizer", c.tokenizer), read(j, "vocab-size", c.vocab_size);
  read(j, "val-fraction", c.val_fraction), read(j, "layers", c.layers), read(j, "heads", c.heads);
  read(j, "dim", c.dim), read(j, "ctx", c.ctx), read(j, "norm", c.norm), read(j, "qk-norm", c.qk_norm);
  read(j, "placement", c.placement);
  read(j, "mlp", c.mlp), read(j, "tie-head", c.tie_head), read(j, "bias", c.bias);
  read(j, "optimizer", c.optimizer), read(j, "batch", c.batch), read(j, "steps", c.steps);
  read(j, "warmup", c.warmup), read(j, "lr", c.lr), read(j, "min-lr", c.min_lr);
  read(j, "weight-decay", c.weight_decay), read(j, "beta1", c.beta1), read(j, "beta2", c.beta2);
  read(j, "z-loss", c.z_loss), read(j, "dyt-alpha", c.dyt_alpha);
  read(j, "momentum", c.momentum), read(j, "clip", c.clip), read(j, "seed", c.seed), read(j, "threads", c.threads);
  read(j, "eval-every", c.eval_every), read(j, "eval-iters", c.eval_iters);
  read(j, "checkpoint-every", c.checkpoint_every), read(j, "instrument", c.instrument);
  read(j, "sharpness-every", c.sharpness_every), read(j, "sharpness-iters", c.sharpness_iters);
  read(j, "sharpness-batch", c.sharpness_batch);
  c.validate();
  return c;
}

}  // namespace tapegrad::lm
