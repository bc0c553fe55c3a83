#include "tapegrad/cli/train_flags.h"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <type_traits>
#include <variant>

#include "tapegrad/cli/cli.h"
#include "tapegrad/lm/settings.h"

namespace tapegrad::cli {

using lm::TrainConfig;

namespace {
// A flag whose value is a name parsed into a typed setting: CLI11 checks the choices, the setting
// is parsed once, and --help shows the default from the setting itself.
template <typename V, typename Parse>
CLI::Option* add_named_option(CLI::App& app, const std::string& flag, V& value, const std::vector<std::string>& choices,
                              Parse parse, const std::string& help, const std::string& type) {
  CLI::Option* o = app.add_option_function<std::string>(flag, [&value, parse](const std::string& name) { value = parse(name); }, help);
  return o->check(CLI::IsMember(choices))->default_str(nn::choice_name(value))->type_name(type);
}
}  // namespace

CLI::Option* add_norm_option(CLI::App& app, const std::string& flag, nn::NormKind& value, const std::string& help) {
  return add_named_option(app, flag, value, nn::norm_names(), nn::NormKind::parse, help + ":\n" + nn::norm_help(), "NORM");
}

void add_train_flags(CLI::App& app, TrainConfig& c, const std::set<std::string>& skip) {
  use_json_config(app);
  app.set_config("--config", "", "JSON file of flag values, e.g. a run's config.json (flags given here win)");
  // One flag per row of the settings table (lm/settings.h), bound to its field of `c`.
  for (const lm::Setting& s : lm::settings()) {
    if (skip.count(s.key)) continue;
    const std::string flag = "--" + s.key;
    CLI::Option* o = lm::visit_setting(s, c, [&](auto& value) -> CLI::Option* {
          using V = std::decay_t<decltype(value)>;
          if constexpr (std::is_same_v<V, nn::NormKind>) {
            return add_norm_option(app, flag, value, s.help);
          } else if constexpr (std::is_same_v<V, nn::Placement>) {
            return add_named_option(app, flag, value, nn::placement_names(), nn::Placement::parse, s.help, "TEXT");
          } else if constexpr (std::is_same_v<V, nn::MlpKind>) {
            return add_named_option(app, flag, value, nn::mlp_kind_names(), nn::MlpKind::parse, s.help, "TEXT");
          } else if constexpr (std::is_same_v<V, nn::EmbedScale>) {
            return add_named_option(app, flag, value, nn::embed_scale_names(), nn::parse_embed_scale, s.help, "TEXT");
          } else if constexpr (std::is_same_v<V, Precision>) {
            const auto parse = [flag](const std::string& name) { return parse_precision(name, flag); };
            return add_named_option(app, flag, value, precision_names(), parse, s.help, "TEXT");
          } else if constexpr (std::is_same_v<V, bool>) {
            const std::string names = s.negatable ? flag + ",!--no-" + s.key : flag;
            return app.add_flag(names, value, s.help)->default_str(value ? "true" : "false");
          } else {
            CLI::Option* opt = app.add_option(flag, value, s.help)->capture_default_str();
            if constexpr (std::is_same_v<V, uint64_t>) opt->check(unsigned_integer());
            if (!s.renamed.empty()) opt->transform([&s](std::string v) { return lm::current_name(s, std::move(v)); });
            if (const auto choices = lm::setting_choices(s); !choices.empty()) opt->check(CLI::IsMember(choices));
            return opt;
          }
        });
    // Stored absolute (config.json, checkpoints), so --config and --resume work from any folder.
    if (s.path)
      o->transform([](std::string path) { return path.empty() ? path : std::filesystem::absolute(path).lexically_normal().string(); });
    o->group(lm::to_string(s.group));
  }
}

std::set<std::string> given_settings(const CLI::App& app) {
  std::set<std::string> given;
  for (const CLI::Option* o : app.get_options())
    if (o->count() > 0 && !o->get_lnames().empty()) given.insert(o->get_lnames()[0]);
  return given;
}

}  // namespace tapegrad::cli
