#include "tapegrad/lm/train_config.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tapegrad/lm/settings.h"
#include "tapegrad/lm/usage_error.h"
#include "tapegrad/error.h"
#include "tapegrad/text/lexical.h"
#include "tapegrad/text/tokenizer.h"

namespace tapegrad::lm {

nn::DecoderConfig TrainConfig::model_for(int64_t vocab) const {
  nn::DecoderConfig m = model;
  m.vocab_size = vocab;
  return m;
}

namespace {
// check() for settings' values: a failure is a SettingError naming each setting as {key}.
template <typename... Args>
void check_setting_value(bool ok, Args&&... args) {
  if (!ok) throw SettingError(cat(std::forward<Args>(args)...));
}
}  // namespace

namespace {
// The table's checks of one setting's value: finite, in its range, at most its size bound, one of
// its choices.
void check_setting(const Setting& s, const TrainConfig& c) {
  visit_setting(s, c, [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_arithmetic_v<V> && !std::is_same_v<V, bool>) {
          if constexpr (std::is_floating_point_v<V>)
            check_setting_value(std::isfinite(v), "{", s.key, "}", " must be a finite number, got ", v);
          if (s.range) {
            check_setting_value(s.range->contains(static_cast<double>(v)), "{", s.key, "}", " ", s.range->text(), ", got ", v);
          }
          if (s.at_most)
            check_setting_value(static_cast<double>(v) <= *s.at_most, "{", s.key, "}", " ", v, " is too large (at most ",
                       static_cast<int64_t>(*s.at_most), ")");
        } else if constexpr (std::is_same_v<V, std::string>) {
          check_setting_value(!s.path || v.find('\0') == std::string::npos, "{", s.key, "} '", text::shown(v),
                              "': a path cannot hold a NUL byte (the system would read it only up to the NUL)");
          if (const std::vector<std::string> choices = setting_choices(s); !choices.empty()) {
            std::string allowed;
            for (size_t i = 0; i < choices.size(); ++i)
              allowed += cat(i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ", choices[i]);
            check_setting_value(std::find(choices.begin(), choices.end(), v) != choices.end(), "{", s.key, "}", " must be ",
                       allowed, ", got '", v, "'");
          }
        }
      });
}
}  // namespace

const std::vector<SettingRelation>& setting_relations() {
  // Bounds far above anything trainable here keep every product of sizes downstream (tokens per
  // step, parameter counts, FLOP estimates) far inside 64 bits.
  using C = const TrainConfig&;
  static const std::vector<SettingRelation> table = {
      {"heads-divide-dim", Severity::kError, {{"dim", 30}, {"heads", 4}},
       [](C c) { return c.model.dim % c.model.heads == 0 ? "" : cat("{heads} ", c.model.heads, " does not divide {dim} ", c.model.dim); }},
      {"tokens-per-step", Severity::kError, {{"batch", 1 << 20}, {"ctx", 1024}},
       [](C c) {
         return c.batch * c.model.ctx <= int64_t{1} << 28 ? ""
                : cat("{batch} ", c.batch, " x {ctx} ", c.model.ctx, " is too many tokens per step (at most 2^28)");
       }},
      {"tokens-per-measurement", Severity::kError, {{"sharpness-batch", 1 << 20}, {"ctx", 1024}},
       [](C c) {
         return c.sharpness_batch * c.model.ctx <= int64_t{1} << 28 ? ""
                : cat("{sharpness-batch} ", c.sharpness_batch, " x {ctx} ", c.model.ctx,
                      " is too many tokens per measurement (at most 2^28)");
       }},
      {"micro-batches", Severity::kError, {{"accumulate", 16}, {"batch", 8}},
       [](C c) {
         return c.accumulate <= c.batch ? ""
                : cat("{accumulate} ", c.accumulate, " is more micro-batches than the {batch} of ", c.batch,
                      " sequences (each micro-batch holds at least one)");
       }},
      {"min-lr-below-lr", Severity::kError, {{"min-lr", 1.0}, {"lr", 0.01}},
       [](C c) { return c.min_lr >= 0 && c.min_lr <= c.lr ? "" : cat("{min-lr} must be in [0, {lr}], got ", c.min_lr); }},
      {"full-batch-sharpness-batch", Severity::kError, {{"full-batch", true}, {"sharpness-batch", 4}},
       [](C c) {
         return !c.full_batch || c.sharpness_batch == 0 || c.sharpness_batch == c.batch ? ""
                : cat("{sharpness-batch} ", c.sharpness_batch, " with {full-batch}: the sharpness is measured on the "
                      "full batch itself ({batch} ", c.batch, "); leave it 0");
       }},
      {"full-batch-batch-sharpness", Severity::kError, {{"full-batch", true}, {"batch-sharpness", 2}, {"sharpness-every", 5}},
       [](C c) {
         return !c.full_batch || c.batch_sharpness == 0 ? ""
                : cat("{batch-sharpness} ", c.batch_sharpness, " with {full-batch}: every batch is the full batch, "
                      "whose sharpness {sharpness-every} measures; leave it 0");
       }},
      {"batch-sharpness-needs-sharpness", Severity::kError, {{"batch-sharpness", 2}},
       [](C c) {
         return c.batch_sharpness == 0 || c.sharpness_every > 0 ? ""
                : cat("{batch-sharpness} ", c.batch_sharpness, " needs {sharpness-every} (it is measured at the "
                      "sharpness measurements)");
       }},
      // The model holds alpha in float32: a value that rounds to 0 or a subnormal there is refused.
      {"dyt-alpha-in-float32", Severity::kError, {{"dyt-alpha", 1e-40}},
       [](C c) -> std::string {
         for (const auto& [flag, alpha] : {std::pair{"dyt-alpha", c.model.dyt_alpha}, {"dyt-alpha-attn", c.model.dyt_alpha_attn}})
           if (alpha != 0 && static_cast<float>(alpha) < std::numeric_limits<float>::min())
             return cat("{", flag, "} ", alpha, " rounds to ", static_cast<float>(alpha),
                        " in float32, the model's precision: use at least ", std::numeric_limits<float>::min());
         return "";
       }},
      {"vocab-covers-tokenizer", Severity::kError, {{"tokenizer", "bpe"}, {"vocab-size", 100}},
       [](C c) -> std::string {
         if (const text::TokenizerEntry* t = text::tokenizer_registry().find(c.tokenizer))
           if (c.vocab_size < t->min_vocab_size)
             return cat("{vocab-size} ", c.vocab_size, " is smaller than the ", t->min_vocab_size, " tokens the ",
                        c.tokenizer, " tokenizer starts from");
         return "";
       }},
      {"qk-norm-has-row-kernels", Severity::kError, {{"qk-norm", "dyt"}},
       [](C c) {
         return c.model.qk_norm.can_be_qk_norm() ? ""
                : cat("{qk-norm} ", c.model.qk_norm.name(), ": this norm has no row kernels for QK-norm; choose one of ",
                      nn::qk_norm_names());
       }},
      // Warnings: a run that trains, but not as its settings suggest.
      {"warmup-within-steps", Severity::kWarning, {{"steps", 10}, {"warmup", 100}},
       [](C c) {
         return c.warmup < c.steps ? ""
                : cat("{warmup} ", c.warmup, " is not shorter than {steps} ", c.steps, ": the learning rate never "
                      "reaches its peak {lr} (", c.lr, "); lower {warmup} or raise {steps}");
       }},
  };
  return table;
}

void TrainConfig::validate() const {
  for (const Setting& s : settings()) check_setting(s, *this);
  // Relations between settings, which no single row can state.
  for (const SettingRelation& r : setting_relations())
    if (r.severity == Severity::kError)
      if (std::string why = r.check(*this); !why.empty()) throw SettingError(std::move(why));
}

std::vector<std::string> TrainConfig::warnings() const {
  std::vector<std::string> out;
  for (const SettingRelation& r : setting_relations())
    if (r.severity == Severity::kWarning)
      if (std::string why = r.check(*this); !why.empty()) out.push_back(std::move(why));
  return out;
}

nlohmann::json to_json(const TrainConfig& c) {
  nlohmann::json j = nlohmann::json::object();
  for (const Setting& s : settings()) j[s.key] = setting_json(s, c);
  return j;
}

nlohmann::json without_model_fields(nlohmann::json train) {
  for (const Setting& s : settings())
    if (in_model(s)) train.erase(s.key);
  return train;
}

TrainConfig train_config_from_json(const nlohmann::json& train, const nn::DecoderConfig& m) {
  check(train.is_object(), "training config: expected a JSON object");
  nlohmann::json j = train;
  TrainConfig from_model;
  from_model.model = m;
  for (const Setting& s : settings())
    if (in_model(s) && !j.contains(s.key)) j[s.key] = setting_json(s, from_model);
  return train_config_from_json(j);
}

TrainConfig train_config_from_json(const nlohmann::json& j) {
  check(j.is_object(), "training config: expected a JSON object");
  TrainConfig c;
  for (const auto& [key, value] : j.items()) {
    const Setting* s = find_setting(key);
    check(s != nullptr, "training config: unknown key '", key, "'");
    set_setting(*s, c, value);
  }
  c.validate();
  return c;
}

}  // namespace tapegrad::lm
