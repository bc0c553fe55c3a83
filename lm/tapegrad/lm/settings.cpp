#include "tapegrad/lm/settings.h"

#include <algorithm>

#include "tapegrad/error.h"
#include "tapegrad/io/json_field.h"
#include "tapegrad/lm/recipes.h"
#include "tapegrad/optim/registry.h"
#include "tapegrad/optim/schedule.h"
#include "tapegrad/precision.h"
#include "tapegrad/text/tokenizer.h"
#include "tapegrad/threads.h"

namespace tapegrad::lm {

std::string to_string(SettingGroup g) {
  switch (g) {
    case SettingGroup::kModel: return "Model";
    case SettingGroup::kData: return "Data";
    case SettingGroup::kOptimisation: return "Optimisation";
    case SettingGroup::kMeasurement: return "Measurement";
    case SettingGroup::kBookkeeping: return "Bookkeeping";
  }
  return "?";
}

namespace {

using G = SettingGroup;
using R = SweepRole;
constexpr double kInf = std::numeric_limits<double>::infinity();

SettingRange positive() { return SettingRange::positive(); }
SettingRange at_least_zero(std::string note = {}) { return SettingRange::at_least_zero(std::move(note)); }
SettingRange unit_interval_open_above() { return {0, 1, false, true}; }

void append(std::vector<Setting>& table, std::vector<Setting> rows) {
  for (Setting& r : rows) table.push_back(std::move(r));
}

// The settings of the model's fields (nn::decoder_fields() rows with help), in the rows' order:
// the architecture's, or the training objective's terms.
void append_model_settings(std::vector<Setting>& table, bool objective) {
  for (const nn::DecoderField& f : nn::decoder_fields()) {
    if (f.help.empty() || f.objective != objective) continue;
    std::string key = f.key;
    std::replace(key.begin(), key.end(), '_', '-');
    table.push_back({.key = std::move(key),
                     .member = f.member,
                     .group = objective ? G::kOptimisation : G::kModel,
                     .help = f.help,
                     .range = f.range,
                     .at_most = f.at_most ? std::optional<double>(static_cast<double>(*f.at_most)) : std::nullopt,
                     .choices = f.choices,
                     .negatable = std::holds_alternative<bool nn::DecoderConfig::*>(f.member)});
  }
}

std::vector<Setting> make_settings() {
  const double k2_20 = 1 << 20, k2_24 = 1 << 24, k2_30 = 1 << 30, k2_40 = 1099511627776.0;
  std::vector<Setting> table{
      // data: what every run of a sweep folder is compared on
      {.key = "data", .member = &TrainConfig::data, .group = G::kData,
       .help = "UTF-8 text file to train on (default: the embedded corpus)", .sweep = R::kShared, .path = true},
      {.key = "tokenizer", .member = &TrainConfig::tokenizer, .group = G::kData,
       .help = cat("how text becomes tokens: ", text::tokenizer_registry().known()), .sweep = R::kShared,
       .registry_names = [] { return text::tokenizer_registry().names(); }},
      {.key = "vocab-size", .member = &TrainConfig::vocab_size, .group = G::kData,
       .help = "BPE vocabulary size (>= 256)", .sweep = R::kShared, .at_most = k2_24},
      {.key = "val-fraction", .member = &TrainConfig::val_fraction, .group = G::kData,
       .help = "last fraction of the text held out for validation", .sweep = R::kShared,
       .range = SettingRange{0, 1, true, true}},
  };
  append_model_settings(table, false);
  append(table, {
      {.key = "recipe", .member = &TrainConfig::recipe, .group = G::kModel,
       .help = "a published recipe, set as its paper sets it (flags given here win):\n" + recipe_help(),
       .choices = recipe_names()},
      // optimisation
      {.key = "optimizer", .member = &TrainConfig::optimizer, .group = G::kOptimisation,
       .help = "the update rule (a registered optimizer):\n" + optimizer_registry().help(),
       .registry_names = [] { return optimizer_registry().names(); }},
      {.key = "schedule", .member = &TrainConfig::schedule, .group = G::kOptimisation,
       .help = "the learning-rate schedule (a registered schedule):\n" + schedule_registry().help(),
       .registry_names = [] { return schedule_registry().names(); }},
      {.key = "batch", .member = &TrainConfig::batch, .group = G::kOptimisation, .help = "sequences per step B",
       .range = positive(), .at_most = k2_20},
      {.key = "accumulate", .member = &TrainConfig::accumulate, .group = G::kOptimisation,
       .help = "run each step's --batch sequences as N micro-batches, one after another, summing their gradients "
               "before the update (nanoGPT's gradient_accumulation_steps with batch_size --batch / N): the same "
               "update up to float rounding, 1/N of the activation memory",
       .range = SettingRange{1, kInf, false, false}, .at_most = k2_20},
      {.key = "full-batch", .member = &TrainConfig::full_batch, .group = G::kOptimisation,
       .help = "every step on the same --batch sequences, drawn once from the training text: full-batch gradient "
               "descent on that subset (Cohen et al. 2021), whose loss --sharpness-every then measures"},
      {.key = "steps", .member = &TrainConfig::steps, .group = G::kOptimisation, .help = "training steps",
       .range = positive(), .at_most = k2_40},
      {.key = "lr", .member = &TrainConfig::lr, .group = G::kOptimisation, .help = "peak learning rate",
       .range = positive()},
      {.key = "min-lr", .member = &TrainConfig::min_lr, .group = G::kOptimisation,
       .help = "learning rate at the last step: the floor the schedule decays to", .sweep = R::kLab},
      {.key = "warmup", .member = &TrainConfig::warmup, .group = G::kOptimisation, .help = "linear warmup steps",
       .range = at_least_zero(), .at_most = k2_40},
      {.key = "weight-decay", .member = &TrainConfig::weight_decay, .group = G::kOptimisation,
       .help = "weight decay rate (matrices only), applied as --weight-decay-mode says", .range = at_least_zero()},
      {.key = "weight-decay-mode", .member = &TrainConfig::weight_decay_mode, .group = G::kOptimisation,
       .help = "lr-scaled: w -= lr * decay * w per step (torch's AdamW: decoupled from the gradient, scaled by the "
               "lr; SGD's L2 term); independent: w -= (lr / peak lr) * decay * w, the decay not scaled by the lr "
               "(Loshchilov & Hutter 2019's schedule multiplier; Wortsman et al. 2023). Formerly 'coupled' (still read)",
       .choices = weight_decay_mode_names(), .renamed = {{"coupled", "lr-scaled"}}},
      {.key = "beta1", .member = &TrainConfig::beta1, .group = G::kOptimisation, .help = "AdamW beta1",
       .range = unit_interval_open_above()},
      {.key = "beta2", .member = &TrainConfig::beta2, .group = G::kOptimisation, .help = "AdamW beta2",
       .range = unit_interval_open_above()},
      {.key = "momentum", .member = &TrainConfig::momentum, .group = G::kOptimisation, .help = "SGD momentum",
       .range = unit_interval_open_above()},
      {.key = "clip", .member = &TrainConfig::clip, .group = G::kOptimisation,
       .help = "global gradient-norm clip (0: off)", .range = at_least_zero("(0 disables clipping)")},
  });
  append_model_settings(table, true);  // the objective's terms (z-loss), after the update rule's
  append(table, {
      {.key = "seed", .member = &TrainConfig::seed, .group = G::kOptimisation,
       .help = "seed of the initialisation and the batches"},
      // measurement: what every run of a sweep folder is measured with
      {.key = "eval-iters", .member = &TrainConfig::eval_iters, .group = G::kMeasurement,
       .help = "batches per evaluation", .sweep = R::kShared, .range = positive(), .at_most = k2_30},
      {.key = "eval-train", .member = &TrainConfig::eval_train, .group = G::kMeasurement,
       .help = "evaluations also estimate the training split's loss on --eval-iters batches of it (off: half the "
               "forwards, its loss not reported)",
       .sweep = R::kShared, .negatable = true},
      {.key = "sharpness-every", .member = &TrainConfig::sharpness_every, .group = G::kMeasurement,
       .help = "measure the loss Hessian's top eigenvalue (and Adam's preconditioned one) every N steps, in float64 "
               "on a fixed batch (0: never)",
       .sweep = R::kShared, .range = at_least_zero("(0: never)"), .at_most = k2_40},
      {.key = "sharpness-iters", .member = &TrainConfig::sharpness_iters, .group = G::kMeasurement,
       .help = "Lanczos steps per sharpness measurement, at most", .sweep = R::kShared,
       .range = SettingRange{1, 1000, false, false}},
      {.key = "sharpness-batch", .member = &TrainConfig::sharpness_batch, .group = G::kMeasurement,
       .help = "sequences in the sharpness batch (0: --batch)", .sweep = R::kShared,
       .range = at_least_zero("(0: {batch})"), .at_most = k2_20},
      {.key = "batch-sharpness", .member = &TrainConfig::batch_sharpness, .group = G::kMeasurement,
       .help = "at each sharpness measurement also the batch sharpness of N fresh training batches (Andreyev & "
               "Beneventano 2024: the mean of g'Hg / g'g, each batch's Hessian along its gradient) and the mean of "
               "their Hessians' top eigenvalues (0: not measured)",
       .sweep = R::kShared, .range = at_least_zero("(0: not measured)"), .at_most = 1024},
      // bookkeeping: changes nothing a run computes
      {.key = "threads", .member = &TrainConfig::threads, .group = G::kBookkeeping, .help = "threads (0: one per core)",
       .sweep = R::kFree, .range = at_least_zero("(0: one per core)"), .at_most = kMaxThreads},
      {.key = "eval-every", .member = &TrainConfig::eval_every, .group = G::kBookkeeping,
       .help = "steps between evaluations (0: none)", .sweep = R::kLab, .range = at_least_zero(), .at_most = k2_40},
      {.key = "checkpoint-every", .member = &TrainConfig::checkpoint_every, .group = G::kBookkeeping,
       .help = "steps between checkpoints (0: only at the end)", .sweep = R::kLab, .range = at_least_zero(),
       .at_most = k2_40},
      {.key = "instrument", .member = &TrainConfig::instrument, .group = G::kBookkeeping,
       .help = "log per-layer residual/norm RMS, attention logit, grad norms", .sweep = R::kLab},
  });
  return table;
}

}  // namespace

const std::vector<Setting>& settings() {
  static const std::vector<Setting> table = make_settings();
  return table;
}

const nn::DecoderField& decoder_field(const Setting& s) {
  const auto* member = std::get_if<nn::DecoderMember>(&s.member);
  check(member != nullptr, "settings table: '", s.key, "' is not a model knob");
  for (const nn::DecoderField& f : nn::decoder_fields())
    if (f.member == *member) return f;
  throw Error(cat("settings table: '", s.key, "' sets a DecoderConfig field nn::decoder_fields() does not have"));
}

std::vector<std::string> setting_choices(const Setting& s) { return s.registry_names ? s.registry_names() : s.choices; }

const Setting* find_setting(std::string_view key) {
  for (const Setting& s : settings())
    if (s.key == key) return &s;
  return nullptr;
}

nlohmann::json setting_json(const Setting& s, const TrainConfig& c) {
  return visit_setting(s, c, [&](const auto& v) -> nlohmann::json {
    if constexpr (nn::kNamedChoice<std::decay_t<decltype(v)>>) return nn::choice_name(v);
    else return v;
  });
}

void set_setting(const Setting& s, TrainConfig& c, const nlohmann::json& value) {
  const nlohmann::json j = {{s.key, value}};
  visit_setting(s, c, [&](auto& out) {
    using V = std::decay_t<decltype(out)>;
    if constexpr (nn::kNamedChoice<V>) {  // a typed field stored by name ("layernorm", "post"): parsed once, here
      std::string name;
      io::read_field(j, s.key.c_str(), name, "training config");
      nn::parse_choice(name, "training config: '" + s.key + "'", out);
    } else {
      io::read_field(j, s.key.c_str(), out, "training config");
      if constexpr (std::is_same_v<V, std::string>) out = current_name(s, std::move(out));
    }
  });
}

std::string current_name(const Setting& s, std::string text) {
  for (const auto& [old, now] : s.renamed)
    if (text == old) return now;
  return text;
}

nlohmann::json current_value(std::string_view key, nlohmann::json value) {
  const Setting* s = find_setting(key);
  if (s == nullptr || s->renamed.empty() || !value.is_string()) return value;
  return current_name(*s, value.get<std::string>());
}

std::string settings_markdown() {
  const TrainConfig defaults;
  std::string md;
  for (const SettingGroup g : {SettingGroup::kModel, SettingGroup::kData, SettingGroup::kOptimisation,
                               SettingGroup::kMeasurement, SettingGroup::kBookkeeping}) {
    md += cat(md.empty() ? "" : "\n", "| ", to_string(g), " | default | what it sets |\n|---|---|---|\n");
    for (const Setting& s : settings()) {
      if (s.group != g) continue;
      const nlohmann::json v = setting_json(s, defaults);
      std::string shown = v.is_string() ? v.get<std::string>() : v.dump();
      if (s.key == "data" && shown.empty()) shown = "the embedded corpus";
      const std::string flag = s.negatable ? cat("`--", s.key, "` / `--no-", s.key, "`") : cat("`--", s.key, "`");
      std::string help;  // one table cell: '|' escaped, lines joined
      for (const char c : s.help) {
        if (c == '|') help += "\\|";
        else help += c == '\n' ? ' ' : c;
      }
      md += cat("| ", flag, " | ", shown, " | ", help, " |\n");
    }
  }
  return md;
}

}  // namespace tapegrad::lm
