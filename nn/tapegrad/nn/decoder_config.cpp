#include "tapegrad/nn/decoder_config.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "tapegrad/io/json_field.h"

namespace tapegrad::nn {

std::string to_string(EmbedScale s) {
  switch (s) {
    case EmbedScale::kNone: return "none";
    case EmbedScale::kFixed: return "fixed";
    case EmbedScale::kLearned: return "learned";
  }
  return "?";
}

std::vector<std::string> embed_scale_names() { return {"none", "fixed", "learned"}; }
std::vector<std::string> embed_scale_rules() { return {"sqrt-dim", "unit-input"}; }

double DecoderConfig::embed_scale_value() const {
  if (embed_scale_init > 0) return embed_scale_init;
  if (embed_scale_rule == "unit-input") {
    const double alpha0 = norm.name() != "dyt" ? 1.0 : dyt_alpha_attn > 0 ? dyt_alpha_attn : dyt_alpha;
    return 1.0 / (alpha0 * init_std);
  }
  return std::sqrt(static_cast<double>(dim));
}

EmbedScale parse_embed_scale(const std::string& name) {
  for (const EmbedScale s : {EmbedScale::kNone, EmbedScale::kFixed, EmbedScale::kLearned})
    if (to_string(s) == name) return s;
  throw Error(cat("unknown embedding scale '", name.substr(0, 64), "' (none, fixed or learned)"));
}

void DecoderConfig::validate() const {
  check(vocab_size > 0, "config: vocab_size must be positive, got ", vocab_size);
  check(ctx > 0, "config: ctx must be positive, got ", ctx);
  check(layers > 0, "config: layers must be positive, got ", layers);
  check(heads > 0, "config: heads must be positive, got ", heads);
  check(dim > 0, "config: dim must be positive, got ", dim);
  check(dim % heads == 0, "config: heads = ", heads, " does not divide dim = ", dim);
  check(mlp_hidden >= 0, "config: mlp_hidden must be >= 0, got ", mlp_hidden);
  check(norm_eps >= 0 && std::isfinite(norm_eps), "config: norm_eps must be a finite number >= 0, got ", norm_eps);
  check(init_std > 0 && std::isfinite(init_std), "config: init_std must be a finite positive number, got ", init_std);
  // At most 1: PaLM uses 1e-4; a coefficient near 1 already outweighs the cross-entropy itself.
  check(z_loss >= 0 && z_loss <= 1, "config: z_loss must be in [0, 1], got ", z_loss);
  // tanh(alpha x) needs alpha > 0 (0 would zero every activation); above 100 it is a sign function.
  check(dyt_alpha > 0 && dyt_alpha <= 100, "config: dyt_alpha must be in (0, 100], got ", dyt_alpha);
  check(static_cast<float>(dyt_alpha) >= std::numeric_limits<float>::min(), "config: dyt_alpha ", dyt_alpha,
        " rounds to ", static_cast<float>(dyt_alpha), " in float32; at least ", std::numeric_limits<float>::min());
  check(dyt_alpha_attn == 0 || (dyt_alpha_attn > 0 && dyt_alpha_attn <= 100 &&
                                 static_cast<float>(dyt_alpha_attn) >= std::numeric_limits<float>::min()),
        "config: dyt_alpha_attn must be 0 (dyt_alpha) or in (0, 100], got ", dyt_alpha_attn);
  check(std::isfinite(embed_scale_init) && embed_scale_init >= 0 && embed_scale_init <= 1e6,
        "config: embed_scale_init must be in [0, 1e6] (0: by embed_scale_rule), got ", embed_scale_init);
  const auto rules = embed_scale_rules();
  check(std::find(rules.begin(), rules.end(), embed_scale_rule) != rules.end(),
        "config: embed_scale_rule must be sqrt-dim or unit-input, got '", embed_scale_rule.substr(0, 64), "'");
  // Sizes from files are bounded (the rows' at_most) before anything is allocated: every product
  // of them downstream (parameter counts, activations) then stays far inside 64 bits.
  for (const DecoderField& f : decoder_fields())
    if (f.at_most)
      if (const auto* m = std::get_if<int64_t DecoderConfig::*>(&f.member))
        check(this->**m <= *f.at_most, "config: ", f.key, " = ", this->**m, " is too large (at most ", *f.at_most, ")");
}

// GPT-2's initialisation: every linear map and embedding ~ N(0, init_std^2), biases 0, and the
// two residual projections of each block at init_std / sqrt(2 layers), so the residual stream's
// variance does not grow with depth at init.
BlockOptions DecoderConfig::block_options() const {
  return {.dim = dim,
          .heads = heads,
          .norm = norm,
          .placement = placement,
          .mlp = mlp,
          .mlp_hidden = mlp_hidden,
          .bias = bias,
          .norm_eps = norm_eps,
          .qk_norm = qk_norm,
          .init_std = init_std,
          .proj_init_std = init_std / std::sqrt(2.0 * static_cast<double>(layers)),
          .layers = layers,
          .dyt_alpha = dyt_alpha,
          .dyt_alpha_attn = dyt_alpha_attn,
          .dyt_beta = dyt_beta};
}

const std::vector<DecoderField>& decoder_fields() {
  using C = DecoderConfig;
  using R = SettingRange;
  constexpr int64_t k2_16 = int64_t{1} << 16, k2_20 = int64_t{1} << 20, k2_24 = int64_t{1} << 24;
  // In --help order. The shape is named as the flags name it; checkpoints written before said
  // n_layer, n_head, context.
  static const std::vector<DecoderField> table{
      {.key = "layers", .member = &C::layers, .former_key = "n_layer", .help = "transformer blocks",
       .range = R::positive(), .at_most = 4096},
      {.key = "heads", .member = &C::heads, .former_key = "n_head", .help = "attention heads (must divide --dim)",
       .range = R::positive(), .at_most = 4096},
      {.key = "dim", .member = &C::dim, .help = "model width C", .range = R::positive(), .at_most = k2_16},
      {.key = "ctx", .member = &C::ctx, .former_key = "context", .help = "context length T", .range = R::positive(),
       .at_most = k2_20},
      {.key = "norm", .member = &C::norm, .help = "the norm of every block and before the LM head (a registered norm)"},
      {.key = "qk_norm", .member = &C::qk_norm, .added_later = true,
       .help = "normalise q and k per head (" + qk_norm_names() + ")"},
      {.key = "placement", .member = &C::placement, .help = "where the norms sit: " + placement_help()},
      {.key = "mlp", .member = &C::mlp, .help = "the MLP: " + mlp_kind_help()},
      {.key = "mlp_hidden", .member = &C::mlp_hidden,
       .help = "the MLP's hidden width (0: 4 x --dim for gelu, 8/3 x --dim rounded up to a multiple of 8 for swiglu)",
       .range = R::at_least_zero("(0: by --mlp)"), .at_most = k2_20},
      {.key = "dyt_alpha", .member = &C::dyt_alpha, .added_later = true,
       .help = "DyT's initial alpha in tanh(alpha x) (with --norm dyt; other norms ignore it)",
       .range = R{0, 100, true, false}},
      {.key = "tie_head", .member = &C::tie_head, .help = "share the token embedding with the LM head"},
      {.key = "bias", .member = &C::bias, .help = "biases in the linear layers"},
      {.key = "dyt_alpha_attn", .member = &C::dyt_alpha_attn, .added_later = true,
       .help = "the initial alpha of the DyT before attention (0: --dyt-alpha, which then sets the others: the FFN "
               "input's and the final one)",
       .range = R{0, 100, false, false}},
      {.key = "dyt_beta", .member = &C::dyt_beta, .added_later = true,
       .help = "DyT's additive beta (Zhu et al.'s LLM recipe has none)"},
      {.key = "embed_scale", .member = &C::embed_scale, .added_later = true,
       .help = "scale the token embeddings: none, fixed (a constant: DeepNet's sqrt(dim)) or learned (a scalar "
               "parameter: DyT's LLM recipe)"},
      {.key = "embed_scale_init", .member = &C::embed_scale_init, .added_later = true,
       .help = "the embedding scale, or its initial value when learned (0: by --embed-scale-rule)",
       .range = R{0, 1e6, false, false, "(0: by --embed-scale-rule)"}},
      {.key = "embed_scale_positions", .member = &C::embed_scale_positions, .added_later = true,
       .help = "the embedding scale multiplies token + position, what enters the first block (off: the token "
               "embedding alone, as the DyT paper's LLaMA, which has no position table)"},
      {.key = "embed_scale_rule", .member = &C::embed_scale_rule, .added_later = true,
       .help = "the initial embedding scale when --embed-scale-init is 0: sqrt-dim (the DyT paper's and DeepNet's "
               "formula) or unit-input (1 / (alpha0 x 0.02): the first norm's input at the magnitude that formula "
               "gives at the DyT paper's width 4096)",
       .choices = embed_scale_rules()},
      {.key = "embed_norm", .member = &C::embed_norm, .added_later = true,
       .help = "a norm (of --norm's kind) on the embeddings before the first block (Peri-LN's setup)"},
      {.key = "final_norm", .member = &C::final_norm, .help = "a norm before the LM head (DeepNet's post-norm stack has none)"},
      {.key = "precision", .member = &C::precision, .added_later = true,
       .help = "mixed precision: fp32, or bf16 (the linear layers' and LM head's GEMMs on bfloat16 operands with "
               "float32 sums, as torch.autocast; weights, gradients, norms, softmax, loss and optimizer in float32)",
       .choices = precision_names()},
      {.key = "norm_eps", .member = &C::norm_eps,
       .help = "the epsilon under every norm's square root (LayerNorm, RMSNorm, ScaleNorm)", .range = R{0, 1, true, false}},
      {.key = "norm_precision", .member = &C::norm_precision, .added_later = true,
       .help = "fp32, or bf16: every norm's input and output rounded to bfloat16 (statistics summed in float32), as "
               "a bf16 implementation computes them (fp32: float32, as LLaMA and T5 keep their norms)",
       .choices = precision_names()},
      {.key = "init_std", .member = &C::init_std,
       .help = "the standard deviation of the initial weights (GPT-2's 0.02; each block's two residual projections "
               "get it / sqrt(2 --layers))",
       .range = R{0, 1, true, false}},
      {.key = "z_loss", .member = &C::z_loss, .added_later = true,
       .help = "z-loss coefficient: adds z * logsumexp(logits)^2 per token, keeping output logits from drifting "
               "(PaLM: 1e-4; 0: off)",
       .range = R{0, 1, false, false, "(0: off; PaLM uses 1e-4)"}, .objective = true},
      // Set by the tokenizer (its vocabulary's size), so no setting.
      {.key = "vocab_size", .member = &C::vocab_size, .at_most = k2_24},
  };
  return table;
}

const DecoderField* find_decoder_field(std::string_view key) {
  for (const DecoderField& f : decoder_fields())
    if (f.key == key) return &f;
  return nullptr;
}

std::string choice_name(const NormKind& v) { return to_string(v); }
std::string choice_name(const Placement& v) { return to_string(v); }
std::string choice_name(const MlpKind& v) { return to_string(v); }
std::string choice_name(EmbedScale v) { return to_string(v); }
std::string choice_name(Precision v) { return std::string(precision_name(v)); }

namespace {
template <typename V, typename Parse>
void parse_named(const std::string& name, std::string_view what, V& out, Parse parse) {
  try {
    out = parse(name);
  } catch (const Error& e) {
    throw Error(cat(what, ": ", e.what()));
  }
}
}  // namespace

void parse_choice(const std::string& name, std::string_view what, NormKind& out) {
  parse_named(name, what, out, [](const std::string& n) { return NormKind::parse(n); });
}
void parse_choice(const std::string& name, std::string_view what, Placement& out) {
  parse_named(name, what, out, [](const std::string& n) { return Placement::parse(n); });
}
void parse_choice(const std::string& name, std::string_view what, MlpKind& out) {
  parse_named(name, what, out, [](const std::string& n) { return MlpKind::parse(n); });
}
void parse_choice(const std::string& name, std::string_view what, EmbedScale& out) {
  parse_named(name, what, out, [](const std::string& n) { return parse_embed_scale(n); });
}
void parse_choice(const std::string& name, std::string_view what, Precision& out) {
  parse_named(name, what, out, [](const std::string& n) {
    for (const std::string& known : precision_names())
      if (known == n) return parse_precision(n, "precision");
    throw Error(cat("unknown precision '", n.substr(0, 64), "'; known: ", precision_names()[0], ", ", precision_names()[1]));
  });
}

nlohmann::json decoder_field_json(const DecoderField& f, const DecoderConfig& c) {
  return std::visit(
      [&](auto member) -> nlohmann::json {
        const auto& v = c.*member;
        if constexpr (kNamedChoice<std::decay_t<decltype(v)>>) return choice_name(v);
        else return v;
      },
      f.member);
}

void set_decoder_field(const DecoderField& f, DecoderConfig& c, const nlohmann::json& value) {
  const nlohmann::json j = {{f.key, value}};
  std::visit(
      [&](auto member) {
        auto& out = c.*member;
        if constexpr (kNamedChoice<std::decay_t<decltype(out)>>) {  // stored by name
          std::string name;
          io::read_field(j, f.key.c_str(), name, "config");
          parse_choice(name, "config: " + f.key, out);
        } else {
          io::read_field(j, f.key.c_str(), out, "config");
        }
      },
      f.member);
}

nlohmann::json to_json(const DecoderConfig& c) {
  nlohmann::json j = nlohmann::json::object();
  for (const DecoderField& f : decoder_fields()) j[f.key] = decoder_field_json(f, c);
  return j;
}

namespace {

// j with the keys of earlier versions under today's (DecoderField::former_key); both at once is an
// error. `renamed` receives {today's key: the file's}, so errors name what the file says.
nlohmann::json current_keys(const nlohmann::json& j, std::map<std::string, std::string>& renamed) {
  check(j.is_object(), "config: expected a JSON object, got ", j.type_name());
  nlohmann::json out = j;
  for (const DecoderField& f : decoder_fields()) {
    if (f.former_key.empty() || !j.contains(f.former_key)) continue;
    check(!j.contains(f.key), "config: both '", f.key, "' and its former name '", f.former_key, "'");
    out[f.key] = j[f.former_key];
    out.erase(f.former_key);
    renamed[f.key] = f.former_key;
  }
  return out;
}

// Sets the fields `given` holds (former names read as today's), then validates the whole.
DecoderConfig apply(DecoderConfig c, const nlohmann::json& given, bool all_required) {
  std::map<std::string, std::string> renamed;
  const nlohmann::json j = current_keys(given, renamed);
  if (all_required)
    for (const DecoderField& f : decoder_fields())
      check(j.contains(f.key) || f.added_later, "config: missing field '", f.key, "'");
  for (const auto& [key, value] : j.items()) {
    const DecoderField* f = find_decoder_field(key);
    check(f != nullptr, "config: unknown field '", key, "'");
    try {
      set_decoder_field(*f, c, value);
    } catch (const Error& e) {
      const auto was = renamed.find(key);
      if (was == renamed.end()) throw;
      throw Error(cat(e.what(), " (written as '", was->second, "')"));
    }
  }
  c.validate();
  return c;
}

}  // namespace

DecoderConfig decoder_config_from_json(const nlohmann::json& j) { return apply(DecoderConfig{}, j, true); }

DecoderConfig decoder_config_merge(DecoderConfig base, const nlohmann::json& j) { return apply(base, j, false); }

}  // namespace tapegrad::nn
