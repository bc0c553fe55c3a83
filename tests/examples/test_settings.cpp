// The settings table (lm/settings.h): every TrainConfig field has exactly one row, and everything
// derived from the table — JSON both ways, the checkpoint's model/train split, range checks, the
// flags — agrees with it.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <utility>

#include "tapegrad/io/file.h"
#include "tapegrad/lm/recipes.h"
#include <set>
#include "tapegrad/lm/settings.h"
#include "tapegrad/lm/usage_error.h"

using namespace tapegrad;

namespace {
// The number of fields of an aggregate, by brace-initialising it from ever more values that
// convert to any field type (no definition needed: only the well-formedness is asked).
struct AnyField {
  template <typename T>
  operator T&() const;
};
template <typename T, size_t... I>
constexpr bool brace_initialisable(std::index_sequence<I...>) {
  return requires { T{(void(I), AnyField{})...}; };
}
template <typename T, size_t N = 0>
constexpr size_t field_count() {
  if constexpr (brace_initialisable<T>(std::make_index_sequence<N + 1>{})) return field_count<T, N + 1>();
  else return N;
}

struct ThreeFields {
  int a;
  std::string b;
  nn::NormKind c;
};
}  // namespace

TEST_CASE("settings: every TrainConfig field has exactly one row in the table", "[settings]") {
  static_assert(field_count<ThreeFields>() == 3, "the field counter counts");
  // A field added to TrainConfig without a row makes the counts differ (and one added twice, or a
  // row pointing at another's field, makes two rows share a member). TrainConfig::model is one
  // field, whose own fields are the model knobs (the next test).
  size_t own = 0;
  for (const auto& s : lm::settings()) own += !lm::in_model(s);
  CHECK(own + 1 == field_count<lm::TrainConfig>());
  const auto& table = lm::settings();
  for (size_t i = 0; i < table.size(); ++i)
    for (size_t j = i + 1; j < table.size(); ++j) {
      INFO(table[i].key << " and " << table[j].key);
      CHECK(table[i].member != table[j].member);
      CHECK(table[i].key != table[j].key);
    }
}

TEST_CASE("settings: DecoderConfig's fields each have one row, and each model knob names one of them", "[settings]") {
  // A DecoderConfig member without a row in nn::decoder_fields() makes the counts differ; one
  // added twice, or a row pointing at another's member, makes two rows share a member.
  const auto& fields = nn::decoder_fields();
  CHECK(fields.size() == field_count<nn::DecoderConfig>());
  for (size_t i = 0; i < fields.size(); ++i)
    for (size_t j = i + 1; j < fields.size(); ++j) {
      INFO(fields[i].key << " and " << fields[j].key);
      CHECK(fields[i].member != fields[j].member);
      CHECK(fields[i].key != fields[j].key);
    }
  // Every field is a model knob, except vocab_size (the tokenizer's).
  std::set<std::string> named;
  for (const auto& s : lm::settings()) {
    if (!lm::in_model(s)) continue;
    INFO(s.key);
    CHECK(named.insert(lm::decoder_field(s).key).second);  // one knob per field
  }
  std::set<std::string> unnamed;
  for (const auto& f : fields)
    if (!named.count(f.key)) unnamed.insert(f.key);
  CHECK(unnamed == std::set<std::string>{"vocab_size"});
  // Each knob is its row's: the key with '-' for '_', the help, range, size bound and choices.
  for (const auto& s : lm::settings()) {
    if (!lm::in_model(s)) continue;
    const nn::DecoderField& f = lm::decoder_field(s);
    std::string key = f.key;
    std::replace(key.begin(), key.end(), '_', '-');
    CHECK(s.key == key);
    CHECK(s.help == f.help);
    CHECK(s.range.has_value() == f.range.has_value());
    CHECK(s.at_most.has_value() == f.at_most.has_value());
    CHECK(s.choices == f.choices);
    CHECK(s.group == (f.objective ? lm::SettingGroup::kOptimisation : lm::SettingGroup::kModel));
  }
}

TEST_CASE("settings: config.json and the checkpoint split are the table's", "[settings]") {
  lm::TrainConfig c;
  c.model.dim = 96, c.model.heads = 3, c.model.norm = nn::NormKind::parse("rmsnorm"), c.lr = 3e-3, c.seed = 7, c.model.tie_head = false;
  c.model.placement = nn::Placement::parse("peri"), c.data = "/x.txt", c.model.z_loss = 1e-4;
  const nlohmann::json j = lm::to_json(c);
  CHECK(j.size() == lm::settings().size());
  CHECK(j["dim"] == 96);
  CHECK(j["norm"] == "rmsnorm");
  CHECK(j["placement"] == "peri");
  CHECK(j["tie-head"] == false);
  CHECK(lm::to_json(lm::train_config_from_json(j)) == j);  // both ways, every field
  // The checkpoint's "train" leaves out the model's settings and gets them back from the model.
  const nlohmann::json train = lm::without_model_fields(j);
  for (const auto& s : lm::settings()) CHECK(train.contains(s.key) == !lm::in_model(s));
  CHECK(lm::to_json(lm::train_config_from_json(train, c.model_for(65))) == j);
  REQUIRE_THROWS_WITH(lm::train_config_from_json(nlohmann::json{{"stepz", 3}}), "training config: unknown key 'stepz'");
  REQUIRE_THROWS_WITH(lm::train_config_from_json(nlohmann::json{{"dim", "wide"}}),
                      Catch::Contains("field 'dim' must be an integer"));
}

TEST_CASE("settings: each row's range is checked, naming the flag as the table states it", "[settings]") {
  const auto refused = [](auto edit) {
    lm::TrainConfig c;
    edit(c);
    try {
      c.validate();
    } catch (const lm::SettingError& e) {
      // The training layer names the setting; the programs print it as the flag.
      CHECK(e.what() == lm::render_settings(e.message(), ""));
      return e.flags();
    }
    return std::string("accepted");
  };
  CHECK(refused([](auto& c) { c.model.layers = 0; }) == "--layers must be positive, got 0");
  CHECK(refused([](auto& c) { c.model.layers = 5000; }) == "--layers 5000 is too large (at most 4096)");
  CHECK(refused([](auto& c) { c.beta2 = 1; }) == "--beta2 must be in [0, 1), got 1");
  CHECK(refused([](auto& c) { c.clip = -1; }) == "--clip must be >= 0 (0 disables clipping), got -1");
  CHECK(refused([](auto& c) { c.model.z_loss = 2; }) == "--z-loss must be in [0, 1] (0: off; PaLM uses 1e-4), got 2");
  CHECK(refused([](auto& c) { c.model.dyt_alpha = 0; }) == "--dyt-alpha must be in (0, 100], got 0");
  CHECK(refused([](auto& c) { c.val_fraction = 1; }) == "--val-fraction must be in (0, 1), got 1");
  CHECK(refused([](auto& c) { c.lr = std::numeric_limits<double>::quiet_NaN(); }) == "--lr must be a finite number, got nan");
  CHECK(refused([](auto& c) { c.optimizer = "adam"; }) == "--optimizer must be adamw or sgd, got 'adam'");
  CHECK(refused([](auto& c) { c.sharpness_iters = 0; }) == "--sharpness-iters must be in [1, 1000], got 0");
  // Relations between rows stay in validate().
  CHECK(refused([](auto& c) { c.model.dim = 30; }) == "--heads 4 does not divide --dim 30");
  CHECK(refused([](auto& c) { c.min_lr = 1; }) == "--min-lr must be in [0, --lr], got 1");
  CHECK(refused([](auto&) {}) == "accepted");
}

TEST_CASE("settings: every relation of the table refuses or warns on its example, and none is dropped", "[settings]") {
  // A tripwire: the relations by name. A rewrite that drops one fails here, not silently.
  std::vector<std::string> names;
  for (const lm::SettingRelation& r : lm::setting_relations()) names.push_back(r.name);
  CHECK(names == std::vector<std::string>{"heads-divide-dim", "tokens-per-step", "tokens-per-measurement", "micro-batches",
                                          "min-lr-below-lr", "full-batch-sharpness-batch", "full-batch-batch-sharpness",
                                          "batch-sharpness-needs-sharpness", "dyt-alpha-in-float32", "vocab-covers-tokenizer",
                                          "qk-norm-has-row-kernels", "warmup-within-steps"});
  CHECK(lm::TrainConfig{}.warnings().empty());
  for (const lm::SettingRelation& r : lm::setting_relations()) {
    INFO(r.name);
    lm::TrainConfig c;
    for (const auto& [key, value] : r.example.items()) lm::set_setting(*lm::find_setting(key), c, value);
    const std::string why = r.check(c);
    REQUIRE(!why.empty());
    CHECK(r.check(lm::TrainConfig{}).empty());
    // The message names settings as {key}, so programs print flags and Python keywords.
    CHECK(why.find('{') != std::string::npos);
    if (r.severity == lm::Severity::kError) {
      REQUIRE_THROWS_AS(c.validate(), lm::SettingError);
      const auto warned = c.warnings();
      CHECK(std::find(warned.begin(), warned.end(), why) == warned.end());
    } else {
      c.validate();  // trains
      const auto warned = c.warnings();
      CHECK(std::find(warned.begin(), warned.end(), why) != warned.end());
    }
  }
  lm::TrainConfig c;
  c.steps = 10, c.warmup = 100;
  CHECK(lm::render_settings(c.warnings().at(0), "--") ==
        "--warmup 100 is not shorter than --steps 10: the learning rate never reaches its peak --lr (0.001); lower "
        "--warmup or raise --steps");
}

TEST_CASE("settings: every row's range and size bound is checked, on each side, naming the row", "[settings]") {
  // Enumerated from the table, so a row whose check a rewrite drops fails here.
  int checked = 0;
  for (const lm::Setting& s : lm::settings()) {
    INFO(s.key);
    std::vector<double> outside;
    if (s.range) {
      const SettingRange& r = *s.range;
      if (std::isfinite(r.low)) outside.push_back(r.low_open ? r.low : r.low - 1);
      if (std::isfinite(r.high)) outside.push_back(r.high_open ? r.high : r.high + 1);
    }
    if (s.at_most) outside.push_back(*s.at_most + 1);
    for (const double v : outside) {
      lm::TrainConfig c;
      const bool whole = lm::setting_json(s, c).is_number_integer();
      if (whole && v != std::floor(v)) continue;
      try {
        lm::set_setting(s, c, whole ? nlohmann::json(static_cast<int64_t>(v)) : nlohmann::json(v));
      } catch (const Error&) {
        ++checked;  // the field's own type refuses it (a negative count for an unsigned field)
        continue;
      }
      try {
        c.validate();
        FAIL("accepted " << v);
      } catch (const lm::SettingError& e) {
        CHECK_THAT(e.flags(), Catch::StartsWith("--" + s.key + " "));
        ++checked;
      }
    }
  }
  CHECK(checked >= 40);
}

TEST_CASE("settings: a path setting with a NUL byte is refused, the byte shown", "[settings]") {
  lm::TrainConfig c;
  c.data = std::string("text.txt\0junk", 13);
  REQUIRE_THROWS_WITH(c.validate(), "data 'text.txt\\0junk': a path cannot hold a NUL byte (the system would read it "
                                    "only up to the NUL)");
  REQUIRE_THROWS_WITH(io::read_file(std::string("a\0b", 3)), Catch::Contains("'a\\0b': a path cannot hold a NUL byte"));
  REQUIRE_THROWS_WITH(io::write_file_atomic(std::string("x\0evil", 6), "y"), Catch::Contains("'x\\0evil'"));
  REQUIRE_THROWS_WITH(io::ensure_writable_directory(std::string("d\0e", 3)), Catch::Contains("'d\\0e'"));
}

TEST_CASE("settings: docs/training.md's flag tables are the settings table", "[settings][docs]") {
  const std::string begin = "<!-- flags: generated from the settings table (lm/settings.cpp, the model's rows from nn/decoder_config.cpp); the suite checks it -->";
  const std::string end = "<!-- end of flags -->";
  const std::string page = io::read_file(std::string(TAPEGRAD_SOURCE_DIR) + "/docs/training.md");
  const size_t from = page.find(begin), to = page.find(end);
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  const std::string shown = page.substr(from + begin.size() + 1, to - from - begin.size() - 1);
  const std::string want = lm::settings_markdown();
  if (shown != want) {
    io::write_file_atomic("training_flags.md", want);
    FAIL("docs/training.md's flag tables differ from the settings table: replace the lines between its two "
         "'flags' markers with build/tests/training_flags.md, just written");
  }
}

TEST_CASE("recipes: a recipe sets its target and its settings, flags given win, other targets are named", "[settings][recipes]") {
  lm::TrainConfig c;
  c.recipe = "dyt-paper";
  lm::apply_recipe(c, {"recipe"}, {"recipe"});
  CHECK(c.model.norm == nn::NormKind::parse("dyt"));  // the target, when --norm was not given
  CHECK(c.model.embed_scale == nn::EmbedScale::kLearned);
  CHECK(c.model.embed_scale_init == 0);  // sqrt(dim) at the model
  CHECK(c.model.dyt_alpha_attn == 1.0);
  CHECK(c.model.dyt_alpha == 1.0);
  CHECK(!c.model.dyt_beta);
  CHECK(c.model_for(65).embed_scale == nn::EmbedScale::kLearned);
  // A flag given wins over the recipe.
  lm::TrainConfig d;
  d.recipe = "dyt-paper", d.model.dyt_alpha = 2.0;
  lm::apply_recipe(d, {"recipe", "dyt-alpha"}, {"recipe", "dyt-alpha"});
  CHECK(d.model.dyt_alpha == 2.0);
  CHECK(d.model.dyt_alpha_attn == 1.0);
  // A target given otherwise is refused in a run, and left alone in a sweep.
  lm::TrainConfig e;
  e.recipe = "dyt-paper";
  REQUIRE_THROWS_WITH(lm::apply_recipe(e, {"recipe", "norm"}, {"recipe", "norm"}),
                      "recipe dyt-paper is for norm dyt, got layernorm");
  lm::apply_recipe(e, {"norm"}, {"norm"}, /*other_targets_allowed=*/true);
  CHECK(e.model.embed_scale == nn::EmbedScale::kNone);
  CHECK(e.model.dyt_beta);
  lm::TrainConfig p;
  p.recipe = "peri-ln-paper";
  lm::apply_recipe(p, {}, {});
  CHECK(p.model.placement == nn::Placement::parse("peri"));
  CHECK(p.model.embed_norm);
  lm::TrainConfig q;
  q.recipe = "deepnorm-paper";
  lm::apply_recipe(q, {}, {});
  CHECK(q.model.placement == nn::Placement::parse("deepnorm"));
  CHECK(q.model.embed_scale == nn::EmbedScale::kFixed);
  CHECK(!q.model.final_norm);
  // "papers": every run on the recipe aimed at it, targets left as they are.
  for (const auto& [norm, placement] : std::vector<std::pair<std::string, std::string>>{
           {"layernorm", "pre"}, {"layernorm", "peri"}, {"layernorm", "deepnorm"}, {"dyt", "pre"}}) {
    lm::TrainConfig r;
    r.recipe = "papers", r.model.norm = nn::NormKind::parse(norm), r.model.placement = nn::Placement::parse(placement);
    lm::apply_recipe(r, {}, {});
    CHECK(r.model.norm == nn::NormKind::parse(norm));
    CHECK(r.model.placement == nn::Placement::parse(placement));
    CHECK(r.model.embed_norm == (placement == "peri"));
    CHECK(r.model.final_norm == (placement != "deepnorm"));
    CHECK(r.model.embed_scale == (norm == "dyt" ? nn::EmbedScale::kLearned
                                          : placement == "deepnorm" ? nn::EmbedScale::kFixed : nn::EmbedScale::kNone));
    CHECK(r.model.dyt_beta == (norm != "dyt"));
  }
  // Two recipes for one run that both set a setting: refused by name, never settled by order
  // (a DyT run with DeepNorm placement: both scale the embeddings); given a value, it is the user's.
  lm::TrainConfig both;
  both.recipe = "papers", both.model.norm = nn::NormKind::parse("dyt"), both.model.placement = nn::Placement::parse("deepnorm");
  REQUIRE_THROWS_WITH(lm::apply_recipe(both, {}, {}),
                      "recipe papers: dyt-paper-transfer (for norm dyt) and deepnorm-paper (for placement deepnorm) both set "
                      "embed-scale on this run; give embed-scale a value of its own, or one recipe");
  both.model.embed_scale_init = 0;
  lm::apply_recipe(both, {"embed-scale", "embed-scale-init"}, {"embed-scale", "embed-scale-init"});
  CHECK(both.model.embed_scale == nn::EmbedScale::kNone);
  CHECK(!both.model.final_norm);
  CHECK(!both.model.dyt_beta);
  // configure(): the one way from given settings to a config (train_lm's flags, Python's keywords).
  lm::TrainConfig g;
  g.recipe = "dyt-paper";
  const lm::TrainConfig made = lm::configure(g, {"recipe"});
  CHECK(made.model.norm == nn::NormKind::parse("dyt"));
  CHECK(made.model.embed_scale == nn::EmbedScale::kLearned);
  g.model.norm = nn::NormKind::parse("layernorm");
  REQUIRE_THROWS_WITH(lm::configure(g, {"recipe", "norm"}), "recipe dyt-paper is for norm dyt, got layernorm");
  // "papers" takes one recipe per target: the transfer of DyT's, not its literal values.
  std::set<std::pair<std::string, std::string>> targets;
  for (const lm::Recipe* r : lm::recipes_in("papers")) CHECK(targets.insert({r->target_key, r->target_value}).second);
  CHECK(lm::recipes_in("papers").size() == lm::recipes().size() - 1);
  CHECK(lm::recipes_in("dyt-paper").size() == 1);
  // The transfer: the scale on what enters the first block, at the input magnitude the paper's
  // formula gives at its width (1 / (alpha0 x 0.02) = 50 for alpha0 1), an untied head.
  lm::TrainConfig t;
  t.recipe = "dyt-paper-transfer";
  t = lm::configure(t, {"recipe"});
  CHECK(t.model.norm == nn::NormKind::parse("dyt"));
  CHECK(t.model.embed_scale_positions);
  CHECK(t.model.embed_scale_rule == "unit-input");
  CHECK(!t.model.tie_head);
  CHECK(t.beta2 == 0.95);
  CHECK(t.model_for(65).embed_scale_value() == Approx(50.0).epsilon(1e-12));
  t.model.dim = 256;  // the rule does not depend on width: the input magnitude does not
  CHECK(t.model_for(65).embed_scale_value() == Approx(50.0).epsilon(1e-12));
  CHECK(lm::recipes_in("none").empty());
  // The width table: the official code's default below 4096, its README's LLaMA 2 settings above.
  CHECK((lm::dyt_paper_alpha(128) == std::pair{1.0, 1.0}));
  CHECK((lm::dyt_paper_alpha(4096) == std::pair{0.8, 0.2}));
  CHECK((lm::dyt_paper_alpha(5120) == std::pair{0.6, 0.15}));
  CHECK((lm::dyt_paper_alpha(8192) == std::pair{0.2, 0.05}));
}

TEST_CASE("settings: lm's errors name settings, the programs name flags, a value's own braces are kept", "[settings][errors]") {
  const lm::SettingError e("{heads} 3 does not divide {dim} 128, got '{not-a-setting}'");
  CHECK(std::string(e.what()) == "heads 3 does not divide dim 128, got '{not-a-setting}'");
  CHECK(e.flags() == "--heads 3 does not divide --dim 128, got '{not-a-setting}'");
  CHECK(lm::render_settings("{lr", "--") == "{lr");  // an unclosed brace is text
  lm::TrainConfig c;
  c.model.heads = 3;
  try {
    c.validate();
    FAIL("accepted");
  } catch (const lm::SettingError& err) {
    CHECK(std::string(err.what()) == "heads 3 does not divide dim 128");
    CHECK(err.flags() == "--heads 3 does not divide --dim 128");
  }
}
