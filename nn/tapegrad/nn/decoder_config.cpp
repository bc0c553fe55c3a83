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
  // Sizes from files are bounded before anything is allocated: every product of them downstream
  // (parameter counts, activations) then stays far inside 64 bits.
  const auto at_most = [](const char* field, int64_t v, int64_t max) {
    check(v <= max, "config: ", field, " = ", v, " is too large (at most ", max, ")");
  };
  at_most("vocab_size", vocab_size, int64_t{1} << 24), at_most("ctx", ctx, int64_t{1} << 20);
  at_most("layers", layers, 4096), at_most("heads", heads, 4096), at_most("dim", dim, int64_t{1} << 16);
  at_most("mlp_hidden", mlp_hidden, int64_t{1} << 20);
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
  static const std::vector<DecoderField> table{
      {"vocab_size", &C::vocab_size},
      // The shape named as the flags name it; checkpoints written before said n_layer, n_head, context.
      {"ctx", &C::ctx, false, "context"},
      {"layers", &C::layers, false, "n_layer"},
      {"heads", &C::heads, false, "n_head"},
      {"dim", &C::dim},
      {"norm", &C::norm},
      {"placement", &C::placement},
      {"mlp", &C::mlp},
      {"mlp_hidden", &C::mlp_hidden},
      {"tie_head", &C::tie_head},
      {"bias", &C::bias},
      {"final_norm", &C::final_norm},
      {"norm_eps", &C::norm_eps},
      {"init_std", &C::init_std},
      // added later
      {"qk_norm", &C::qk_norm, true},
      {"z_loss", &C::z_loss, true},
      {"dyt_alpha", &C::dyt_alpha, true},
      {"dyt_alpha_attn", &C::dyt_alpha_attn, true},
      {"dyt_beta", &C::dyt_beta, true},
      {"embed_scale", &C::embed_scale, true},
      {"embed_scale_init", &C::embed_scale_init, true},
      {"embed_norm", &C::embed_norm, true},
      {"embed_scale_positions", &C::embed_scale_positions, true},
      {"embed_scale_rule", &C::embed_scale_rule, true},
      {"precision", &C::precision, true},
      {"norm_precision", &C::norm_precision, true},
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
void parse_choice(const std::string& name, std::string_view what, Precision& out) { out = parse_precision(name, what); }

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
