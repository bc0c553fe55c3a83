#include "tapegrad/nn/decoder_config.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

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
  check(context > 0, "config: context must be positive, got ", context);
  check(n_layer > 0, "config: n_layer must be positive, got ", n_layer);
  check(n_head > 0, "config: n_head must be positive, got ", n_head);
  check(dim > 0, "config: dim must be positive, got ", dim);
  check(dim % n_head == 0, "config: n_head = ", n_head, " does not divide dim = ", dim);
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
  at_most("vocab_size", vocab_size, int64_t{1} << 24), at_most("context", context, int64_t{1} << 20);
  at_most("n_layer", n_layer, 4096), at_most("n_head", n_head, 4096), at_most("dim", dim, int64_t{1} << 16);
  at_most("mlp_hidden", mlp_hidden, int64_t{1} << 20);
}

// GPT-2's initialisation: every linear map and embedding ~ N(0, init_std^2), biases 0, and the
// two residual projections of each block at init_std / sqrt(2 n_layer), so the residual stream's
// variance does not grow with depth at init.
BlockOptions DecoderConfig::block_options() const {
  return {dim, n_head, norm, placement, mlp, mlp_hidden, bias, norm_eps, qk_norm, init_std,
          init_std / std::sqrt(2.0 * static_cast<double>(n_layer)), n_layer, dyt_alpha, dyt_alpha_attn, dyt_beta};
}

nlohmann::json to_json(const DecoderConfig& c) {
  return {{"vocab_size", c.vocab_size}, {"context", c.context},       {"n_layer", c.n_layer},
          {"n_head", c.n_head},         {"dim", c.dim},               {"norm", to_string(c.norm)},
          {"placement", to_string(c.placement)}, {"mlp", to_string(c.mlp)}, {"mlp_hidden", c.mlp_hidden},
          {"tie_head", c.tie_head},     {"bias", c.bias},             {"final_norm", c.final_norm},
          {"norm_eps", c.norm_eps},     {"init_std", c.init_std},     {"qk_norm", to_string(c.qk_norm)},
          {"z_loss", c.z_loss},         {"dyt_alpha", c.dyt_alpha},   {"dyt_alpha_attn", c.dyt_alpha_attn},
          {"dyt_beta", c.dyt_beta},     {"embed_scale", to_string(c.embed_scale)},
          {"embed_scale_init", c.embed_scale_init}, {"embed_norm", c.embed_norm},
          {"embed_scale_positions", c.embed_scale_positions}, {"embed_scale_rule", c.embed_scale_rule},
          {"precision", precision_name(c.precision)}, {"norm_precision", precision_name(c.norm_precision)}};
}

namespace {

template <typename V>
void read(const nlohmann::json& j, const char* key, V& out) {
  io::read_field(j, key, out, "config");
}

DecoderConfig apply(DecoderConfig c, const nlohmann::json& j) {
  check(j.is_object(), "config: expected a JSON object, got ", j.type_name());
  const nlohmann::json known = to_json(c);
  for (const auto& [key, value] : j.items())
    check(known.contains(key), "config: unknown field '", key, "'");
  read(j, "vocab_size", c.vocab_size);
  read(j, "context", c.context);
  read(j, "n_layer", c.n_layer);
  read(j, "n_head", c.n_head);
  read(j, "dim", c.dim);
  std::string s;
  if (j.contains("norm")) read(j, "norm", s), c.norm = NormKind::parse(s);
  if (j.contains("qk_norm")) read(j, "qk_norm", s), c.qk_norm = NormKind::parse(s);
  if (j.contains("placement")) read(j, "placement", s), c.placement = Placement::parse(s);
  if (j.contains("mlp")) read(j, "mlp", s), c.mlp = MlpKind::parse(s);
  read(j, "mlp_hidden", c.mlp_hidden);
  read(j, "tie_head", c.tie_head);
  read(j, "bias", c.bias);
  read(j, "final_norm", c.final_norm);
  read(j, "norm_eps", c.norm_eps);
  read(j, "init_std", c.init_std);
  read(j, "z_loss", c.z_loss);
  read(j, "dyt_alpha", c.dyt_alpha);
  read(j, "dyt_alpha_attn", c.dyt_alpha_attn);
  read(j, "dyt_beta", c.dyt_beta);
  if (j.contains("embed_scale")) read(j, "embed_scale", s), c.embed_scale = parse_embed_scale(s);
  read(j, "embed_scale_init", c.embed_scale_init);
  read(j, "embed_norm", c.embed_norm);
  read(j, "embed_scale_positions", c.embed_scale_positions);
  read(j, "embed_scale_rule", c.embed_scale_rule);
  if (j.contains("precision")) read(j, "precision", s), c.precision = parse_precision(s, "config: precision");
  if (j.contains("norm_precision"))
    read(j, "norm_precision", s), c.norm_precision = parse_precision(s, "config: norm_precision");
  c.validate();
  return c;
}

}  // namespace

DecoderConfig decoder_config_from_json(const nlohmann::json& j) {
  check(j.is_object(), "config: expected a JSON object, got ", j.type_name());
  const nlohmann::json fields = to_json(DecoderConfig{});  // named: items() would dangle on a temporary
  const std::set<std::string> added_later = {"qk_norm",         "z_loss",      "dyt_alpha",  "dyt_alpha_attn", "dyt_beta",
                                             "embed_scale",     "embed_scale_init", "embed_norm",
                                             "embed_scale_positions", "embed_scale_rule", "precision", "norm_precision"};
  for (const auto& [key, value] : fields.items())
    check(j.contains(key) || added_later.count(key), "config: missing field '", key, "'");
  return apply(DecoderConfig{}, j);
}

DecoderConfig decoder_config_merge(DecoderConfig base, const nlohmann::json& j) { return apply(base, j); }

}  // namespace tapegrad::nn
