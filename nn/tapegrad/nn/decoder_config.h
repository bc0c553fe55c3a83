// DecoderConfig: everything that defines a Decoder's architecture, serialisable to JSON
// (checkpoints store it next to the weights).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "tapegrad/nn/block.h"
#include "tapegrad/precision.h"
#include "tapegrad/setting_range.h"

namespace tapegrad::nn {

// A scale on the token embeddings before the blocks: none; fixed (a constant, DeepNet's sqrt(dim)
// as in torchscale's decoder); learned (one scalar parameter, Zhu et al. 2025's DyT recipe).
enum class EmbedScale { kNone, kFixed, kLearned };
std::string to_string(EmbedScale s);
EmbedScale parse_embed_scale(const std::string& name);  // "none" | "fixed" | "learned"; throws otherwise
std::vector<std::string> embed_scale_names();
std::vector<std::string> embed_scale_rules();  // "sqrt-dim", "unit-input" (DecoderConfig::embed_scale_rule)

// The model's choices, stored by name in checkpoints, training configs and flags ("rmsnorm",
// "peri", "swiglu", "learned", "bf16"): whether a type is one, a value's name, and the value of a
// name (an Error naming `what`, the name and the choices).
template <typename V>
inline constexpr bool kNamedChoice = std::is_same_v<V, NormKind> || std::is_same_v<V, Placement> ||
                                     std::is_same_v<V, MlpKind> || std::is_same_v<V, EmbedScale> ||
                                     std::is_same_v<V, Precision>;
std::string choice_name(const NormKind& v);
std::string choice_name(const Placement& v);
std::string choice_name(const MlpKind& v);
std::string choice_name(EmbedScale v);
std::string choice_name(Precision v);
void parse_choice(const std::string& name, std::string_view what, NormKind& out);
void parse_choice(const std::string& name, std::string_view what, Placement& out);
void parse_choice(const std::string& name, std::string_view what, MlpKind& out);
void parse_choice(const std::string& name, std::string_view what, EmbedScale& out);
void parse_choice(const std::string& name, std::string_view what, Precision& out);

struct DecoderConfig {
  int64_t vocab_size = 65;
  int64_t ctx = 64;     // longest sequence T (positions in the learned position table)
  int64_t layers = 4;
  int64_t heads = 4;
  int64_t dim = 128;
  NormKind norm = NormKind::parse("layernorm");
  NormKind qk_norm{};  // QK-norm inside every attention (attention.h); default none
  Placement placement{};  // pre
  MlpKind mlp{};  // gelu
  int64_t mlp_hidden = 0;  // 0: 4 dim (gelu) or ~8/3 dim (swiglu)
  bool tie_head = true;    // LM head shares the token embedding (as GPT-2)
  bool bias = true;        // biases in Linear layers (as GPT-2); norms always follow `norm`
  bool final_norm = true;  // a norm of the same kind before the LM head (skipped for norm=none)
  double norm_eps = 1e-5;
  double init_std = 0.02;
  // The training objective's z-loss coefficient (cross_entropy.h): the model computes its own
  // loss, so it lives here; 0: plain cross-entropy.
  double z_loss = 0;
  double dyt_alpha = 0.5;  // DyT's initial alpha (dyt.h; Zhu et al. 2025 use 0.5 for small models)
  // Published recipes (off by default; lm/recipes.h sets them as the papers do):
  double dyt_alpha_attn = 0;  // the initial alpha of the DyT before attention (norm1); 0: dyt_alpha
  bool dyt_beta = true;       // DyT's additive beta (Zhu et al.'s LLM recipe has none)
  EmbedScale embed_scale = EmbedScale::kNone;
  double embed_scale_init = 0;  // the fixed scale, or the learned one's initial value; 0: by embed_scale_rule
  // Where the scale applies: the token embedding alone (false: the DyT paper's LLaMA, which has no
  // position table, and DeepNet's) or what enters the first block, token + position (true).
  bool embed_scale_positions = false;
  // The initial scale when embed_scale_init is 0 (embed_scale_value):
  //   "sqrt-dim":   sqrt(dim), the formula of the DyT paper's LLaMA code and of DeepNet;
  //   "unit-input": 1 / (alpha0 * init_std), alpha0 the first DyT's (1 for other norms): the
  //                 first norm's input alpha0 * s0 * init_std is 1, the magnitude the sqrt(dim)
  //                 formula gives at the DyT paper's width (0.8 * 64 * 0.02 = 1.02 at d = 4096),
  //                 where at width 64 it gives 0.16 and every tanh starts nearly linear.
  std::string embed_scale_rule = "sqrt-dim";
  bool embed_norm = false;      // a norm (of `norm`'s kind) on the embeddings (Peri-LN's setup)
  // Mixed precision (precision.h): bf16 runs the forward under Autocast — the linear layers' and
  // the head's GEMMs on bf16 operands; norm_precision bf16 also computes the norms as a bf16
  // implementation would (nn::apply_norm). Master weights, gradients and optimizer stay float32.
  Precision precision = Precision::kFp32;
  Precision norm_precision = Precision::kFp32;

  // Throws an Error naming the first invalid field and its value.
  void validate() const;
  // The embedding scale (fixed), or its initial value (learned): embed_scale_init, else by
  // embed_scale_rule.
  double embed_scale_value() const;
  BlockOptions block_options() const;
  bool operator==(const DecoderConfig&) const = default;
};

// DecoderConfig's fields, declared once: the checkpoint's model JSON both ways (to_json, the
// readers below), the fields an older checkpoint may lack, and the training settings that set
// them (lm/settings.h makes a setting of each row with help: flag and JSON key the row's key with
// '-' for '_', "--dyt-alpha") are all derived from this table. Adding a model knob is a member
// above and a row here. A test sets every field to a value other than its default and
// round-trips it through a checkpoint, and counts DecoderConfig's members against the rows, so a
// field left out of the table fails.
using DecoderMember =
    std::variant<int64_t DecoderConfig::*, double DecoderConfig::*, bool DecoderConfig::*, std::string DecoderConfig::*,
                 NormKind DecoderConfig::*, Placement DecoderConfig::*, MlpKind DecoderConfig::*,
                 EmbedScale DecoderConfig::*, Precision DecoderConfig::*>;

struct DecoderField {
  std::string key;  // the JSON key: "layers"
  DecoderMember member;
  // Written since a later version of the format: a checkpoint without it gets the default, the
  // model it was trained with (the rest are required).
  bool added_later = false;
  // The key earlier versions wrote it under ("n_layer"), read as this one; "" if none.
  std::string former_key{};
  // As a training setting: its --help text (empty: no setting; vocab_size is the tokenizer's),
  // the range a number may take, a size bound for an integer (also what validate() holds a
  // checkpoint's value to), the names a text field may take. A bool setting has a --no- form.
  std::string help{};
  std::optional<SettingRange> range{};
  std::optional<int64_t> at_most{};
  std::vector<std::string> choices{};
  // A term of the training objective the model computes (z_loss): listed with the optimisation
  // settings, not the architecture.
  bool objective = false;
};

const std::vector<DecoderField>& decoder_fields();
const DecoderField* find_decoder_field(std::string_view key);  // nullptr if none
// A field's value as JSON (the typed fields by name), and set from JSON: strictly, an Error naming
// "config: <key>" for a wrong type or an unknown name. No validate(): the caller checks the whole.
nlohmann::json decoder_field_json(const DecoderField& f, const DecoderConfig& c);
void set_decoder_field(const DecoderField& f, DecoderConfig& c, const nlohmann::json& value);

nlohmann::json to_json(const DecoderConfig& config);
// Strict: a field that is missing, unknown, or of the wrong type is an error naming it — except
// the fields added after the format's first version (DecoderField::added_later), which default to
// the model they were added beside.
DecoderConfig decoder_config_from_json(const nlohmann::json& j);
// Lenient: starts from `base` and overrides only the fields present (unknown ones still fail).
DecoderConfig decoder_config_merge(DecoderConfig base, const nlohmann::json& j);

}  // namespace tapegrad::nn
