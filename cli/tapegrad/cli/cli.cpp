#include "tapegrad/cli/cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string_view>

#include "tapegrad/lm/communicator.h"
#ifdef TAPEGRAD_HAVE_MPI
#include "tapegrad/lm/mpi_communicator.h"
#endif
#include "tapegrad/error.h"
#include "tapegrad/io/json.h"
#include "tapegrad/text/lexical.h"

namespace tapegrad::cli {

namespace {

// CLI11 reads TOML/INI by default; this reads a flat JSON object whose keys are flag names.
// Unknown keys are refused here, naming the file, rather than by CLI11 ("INI was not able to
// parse stepz" for a JSON file).
class JsonConfig : public CLI::Config {
 public:
  explicit JsonConfig(const CLI::App* app) : app_(app) {}

  std::string to_config(const CLI::App* app, bool default_also, bool, std::string) const override {
    nlohmann::ordered_json j;
    for (const CLI::Option* opt : app->get_options({})) {
      if (opt->get_lnames().empty() || opt->get_configurable() == false) continue;
      const std::string name = opt->get_lnames()[0];
      if (opt->count() > 0) j[name] = opt->as<std::string>();
      else if (default_also && !opt->get_default_str().empty()) j[name] = opt->get_default_str();
    }
    return j.dump(2);
  }

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
    nlohmann::json j;
    try {
      const std::string text((std::istreambuf_iterator<char>(input)), std::istreambuf_iterator<char>());
      j = io::parse_json(text, "config file");
    } catch (const Error& e) {
      throw CLI::ConversionError(e.what());
    }
    if (!j.is_object()) throw CLI::ConversionError("config file must hold a JSON object of flag names to values");
    std::vector<CLI::ConfigItem> parsed;
    for (const auto& [key, value] : j.items()) {
      if (app_->get_option_no_throw("--" + key) == nullptr)
        throw CLI::ConversionError(cat("config file ", file_name(), ": unknown key '", text::shown(key, 60),
                                       "' (keys are flag names without the dashes, as in {\"steps\": 100})"));
      CLI::ConfigItem item;
      item.name = key;
      if (value.is_string()) item.inputs = {value.get<std::string>()};
      else if (value.is_boolean()) item.inputs = {value.get<bool>() ? "true" : "false"};
      else if (value.is_number()) item.inputs = {value.dump()};
      else throw CLI::ConversionError("config key '" + text::shown(key, 60) + "' must be a string, number or boolean");
      parsed.push_back(std::move(item));
    }
    return parsed;
  }

 private:
  std::string file_name() const {
    const CLI::Option* o = app_->get_config_ptr();
    return o && o->count() > 0 ? "'" + o->as<std::string>() + "'" : std::string("(--config)");
  }
  const CLI::App* app_;
};

// CLI11 prints a negatable flag as "--tie-head,--no-tie-head{false}" — the value the negation
// sets, which reads as the default — and never prints a flag's default. Here flags show their
// names and, when the program recorded one (default_str), "=default" as options do.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool positional) const override {
    std::string s = CLI::Formatter::make_option_name(opt, positional);
    for (size_t open; (open = s.find('{')) != std::string::npos;) {
      const size_t close = s.find('}', open);
      if (close == std::string::npos) break;
      s.erase(open, close - open + 1);
    }
    return s;
  }
  std::string make_option_opts(const CLI::Option* opt) const override {
    std::string s = CLI::Formatter::make_option_opts(opt);
    if (opt->get_type_size() == 0 && !opt->get_default_str().empty()) s = "=" + opt->get_default_str() + s;
    return s;
  }
};

}  // namespace

namespace {
// The flag's text as a finite number, or an error message. NaN and infinities are refused here,
// once for every numeric check: a comparison with NaN is always false, so a range check alone
// lets it through (CLI::Range did).
std::string parse_finite(const std::string& v, double& x) {
  // strtod, not stod: stod throws on a subnormal such as 5e-324 (ERANGE for underflow), which is a
  // number; only an overflow to infinity is out of range.
  char* end = nullptr;
  errno = 0;
  x = v.empty() || std::isspace(static_cast<unsigned char>(v[0])) ? 0.0 : std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size()) return "must be a number, got " + v.substr(0, 40);
  return std::isfinite(x) ? std::string() : "must be a finite number, got " + v.substr(0, 40);
}

CLI::Validator number_at_least(double low, bool strict, const char* what) {
  return CLI::Validator(
      [=](std::string& v) -> std::string {
        double x = 0;
        if (std::string e = parse_finite(v, x); !e.empty()) return e;
        return (strict ? x > low : x >= low) ? std::string() : std::string("must be ") + what + ", got " + v;
      },
      what);
}
}  // namespace

CLI::Validator in_range(double low, double high) {
  return CLI::Validator(
      [=](std::string& v) -> std::string {
        double x = 0;
        if (std::string e = parse_finite(v, x); !e.empty()) return e;
        return x >= low && x <= high ? std::string() : cat("must be in [", low, ", ", high, "], got ", v);
      },
      cat("[", low, ", ", high, "]"));
}

CLI::Validator unsigned_integer() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        if (std::string e = text::decimal_whole_number(v, true); !e.empty()) return e;  // "-1": the range says why
        uint64_t x = 0;
        const auto [end, err] = std::from_chars(v.data(), v.data() + v.size(), x);
        return err == std::errc() ? std::string() : "must be a whole number in [0, 2^64 - 1], got " + v.substr(0, 40);
      },
      "UINT64");
}

void require_decimal_integers(CLI::App& app) {
  const CLI::Validator int64(
      [](std::string& v) -> std::string {
        if (std::string e = text::decimal_whole_number(v, true); !e.empty()) return e;
        int64_t x = 0;
        const auto [end, err] = std::from_chars(v.data(), v.data() + v.size(), x);
        return err == std::errc() ? std::string() : "must be a whole number in [-2^63, 2^63 - 1], got " + v.substr(0, 40);
      },
      "", "decimal int64");
  const CLI::Validator uint64 = unsigned_integer();
  for (CLI::Option* o : app.get_options()) {
    const std::string type = o->get_type_name();
    if (type.rfind("INT", 0) == 0) o->check(int64);
    else if (type.rfind("UINT", 0) == 0) o->check(uint64);
  }
}

void require_boolean_words(CLI::App& app) {
  // A bare --flag arrives as "true", --no-flag as "false" (CLI11 turns the negated form's value
  // round too), so the words are all a flag's results can be.
  const CLI::Validator words(
      [](std::string& v) -> std::string {
        return v == "true" || v == "false" ? std::string() : "must be true or false, got " + v.substr(0, 40);
      },
      "", "true or false");
  for (CLI::Option* o : app.get_options())
    if (o->get_expected_max() == 0 && o != app.get_help_ptr() && o != app.get_help_all_ptr()) o->check(words);
}

CLI::Validator positive() { return number_at_least(0, true, "positive"); }
CLI::Validator non_negative() { return number_at_least(0, false, "non-negative"); }

void use_json_config(CLI::App& app) {
  app.config_formatter(std::make_shared<JsonConfig>(&app));
  app.allow_config_extras(CLI::config_extras_mode::error);
}

namespace {
// An error's text as one terminal line: control bytes (a newline or NUL in a value, escape
// sequences read from a file) become \xNN; UTF-8 stays as it is, and so does a backslash (values
// the message quotes are already text::shown).
std::string one_line(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", u);
      out += b;
    } else {
      out += c;
    }
  }
  return out;
}
}  // namespace

std::unique_ptr<lm::Communicator> start_communicator([[maybe_unused]] int* argc, [[maybe_unused]] char*** argv) {
#ifdef TAPEGRAD_HAVE_MPI
  return std::make_unique<lm::MpiCommunicator>(argc, argv);
#else
  return std::make_unique<lm::Communicator>();
#endif
}

int run_cli(CLI::App& app, int argc, char** argv, const std::function<int()>& body, const lm::Communicator* comm) {
  const bool root = !comm || comm->root();
  const std::string name = app.get_name();
  const auto usage = [&](const std::string& raw) {
    const std::string what = one_line(raw);
    if (root) std::fprintf(stderr, "%s: error: %s (see --help)\n", name.c_str(), what.c_str());
    return 2;
  };
  const auto failure = [&](const std::string& raw) {
    const std::string what = one_line(raw);
    if (comm && comm->distributed()) {
      std::fprintf(stderr, "%s: error [rank %d of %d]: %s\n", name.c_str(), comm->rank(), comm->size(), what.c_str());
      std::fflush(stderr);
      comm->abort(1);
    }
    std::fprintf(stderr, "%s: error: %s\n", name.c_str(), what.c_str());
    return 1;
  };
  app.formatter(std::make_shared<HelpFormatter>());
  require_decimal_integers(app);
  require_boolean_words(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    if (root) std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    if (root) std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    return usage(e.what());
  }
  try {
    return body();
  } catch (const lm::SettingError& e) {  // the training layer names settings; here they are flags
    return usage(e.flags());
  } catch (const UsageError& e) {
    return usage(e.what());
  } catch (const tapegrad::Error& e) {
    return failure(e.what());
  } catch (const std::bad_alloc&) {
    return failure("out of memory");
  } catch (const std::exception& e) {
    return failure(e.what());
  }
}

}  // namespace tapegrad::cli
