#include "tapegrad/lab/sweep_settings.h"

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "tapegrad/io/json.h"
#include "tapegrad/lm/usage_error.h"
#include "tapegrad/text/lexical.h"

namespace tapegrad::lab {

namespace {
// A range's bound as people write it: 1000000000, not 1e+09.
std::string bound(double v) {
  return v == std::floor(v) && std::fabs(v) < 1e15 ? std::to_string(static_cast<int64_t>(v)) : text::exact_decimal(v);
}

// "" when `program` can be started here as the plots start it (execvp: a path is taken as it is,
// a bare name is looked up on PATH), else why not. The empty value means "the first Python that
// imports matplotlib" and is always good. Checked when the setting is given, so that a mistyped
// interpreter is named before the sweep trains, not passed over for another one after it.
std::string program_fault(const std::string& program) {
  if (program.empty()) return "";
  const auto runnable = [](const std::filesystem::path& p) {
    std::error_code ec;
    return std::filesystem::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  };
  if (program.find('/') != std::string::npos) {
    std::error_code ec;
    if (!std::filesystem::exists(program, ec)) return "no such file";
    return runnable(program) ? "" : "not an executable file";
  }
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    const size_t colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    if (runnable(std::filesystem::path(dir.empty() ? "." : std::string(dir)) / program)) return "";
    if (colon == std::string_view::npos) return "not found on PATH";
    dirs.remove_prefix(colon + 1);
  }
}
}  // namespace

const std::vector<SweepSetting>& sweep_settings() {
  static const std::vector<SweepSetting> table = {
      {"min-lr-ratio", &SweepOptions::min_lr_ratio, "each run decays to lr * ratio", 0, 1},
      {"divergence-factor", &SweepOptions::divergence_factor,
       "a run diverged when, after warmup, its loss exceeds this x its first loss (or is NaN/Inf)", 1, 1e9},
      {"divergence-patience", &SweepOptions::divergence_patience,
       "... for this many consecutive steps (a jump that comes back sooner is a spike, not a divergence)", 1, 1e9},
      {"spike-factor", &SweepOptions::spike_factor,
       "a loss above this x its running mean starts a spike; it counts when the loss comes back", 1, 1e9},
      {"evals", &SweepOptions::evals, "evaluations per run (the last at the final step)", 0, 1e9},
      {"jobs", &SweepOptions::jobs, "runs trained at once; each uses cores/jobs threads", 1, 1024, /*shared=*/false},
      {"out", &SweepOptions::out, "the sweep's folder: sweep.json, runs.csv, curves.csv, report.md, plots/ (given "
       "again, it continues the folder's grid)", 1, 4096, /*shared=*/false},
      {"plots", &SweepOptions::plots, "draw the plots with matplotlib (lab/plot_lab.py)", 0, 0, /*shared=*/false,
       /*former=*/"plot"},
      {"python", &SweepOptions::python, "Python interpreter for the plots (default: the first that imports matplotlib)",
       0, 4096, /*shared=*/false, /*former=*/"", &program_fault},
  };
  return table;
}

const SweepSetting* find_sweep_setting(std::string_view key) {
  for (const SweepSetting& s : sweep_settings())
    if (s.key == key) return &s;
  return nullptr;
}

std::string SweepSetting::type_name() const {
  if (std::holds_alternative<bool SweepOptions::*>(member)) return "";
  return std::holds_alternative<std::string SweepOptions::*>(member) ? "TEXT" : "NUMBER";
}

nlohmann::json sweep_setting_json(const SweepSetting& s, const SweepOptions& o) {
  return std::visit([&](auto member) { return nlohmann::json(o.*member); }, s.member);
}

void set_sweep_setting(const SweepSetting& s, SweepOptions& o, const nlohmann::json& value, std::string_view prefix) {
  const std::string name = cat(prefix, s.key);
  std::visit(
      [&](auto member) {
        using V = std::decay_t<decltype(o.*member)>;
        if constexpr (std::is_same_v<V, bool>) {
          if (!value.is_boolean()) throw lm::UsageError(cat(name, " must be true or false, got ", io::json_excerpt(value)));
          o.*member = value.get<bool>();
        } else if constexpr (std::is_same_v<V, std::string>) {
          if (!value.is_string()) throw lm::UsageError(cat(name, " must be text, got ", io::json_excerpt(value)));
          const std::string& t = value.get_ref<const std::string&>();
          // Only its length here: a path's other faults (a NUL byte, a link) are the folder's checks (sweep.h).
          if (t.size() < s.low || t.size() > s.high)
            throw lm::UsageError(cat(name, " must be ", s.low > 0 ? "non-empty " : "", "text of at most ", bound(s.high),
                                     " bytes, got ", t.size(), " bytes"));
          if (s.fault != nullptr)
            if (const std::string fault = s.fault(t); !fault.empty())
              throw lm::UsageError(cat(name, " '", text::shown(t, 80), "': ", fault));
          o.*member = t;
        } else {
        const bool whole = std::is_integral_v<V>;
        const bool typed = whole ? value.is_number_integer() : value.is_number();
        if (!typed) throw lm::UsageError(cat(name, " must be ", whole ? "a whole number" : "a number", ", got ", io::json_excerpt(value)));
        const double v = value.get<double>();
        if (!std::isfinite(v)) throw lm::UsageError(cat(name, " must be a finite number, got ", v));
        if (!(v >= s.low && v <= s.high))
          throw lm::UsageError(cat(name, " must be in [", bound(s.low), ", ", bound(s.high), "], got ", io::json_excerpt(value)));
        o.*member = value.get<V>();
        }
      },
      s.member);
}

void set_sweep_setting(const SweepSetting& s, SweepOptions& o, const std::string& text, std::string_view prefix) {
  const std::string name = cat(prefix, s.key);
  const char* end = text.data() + text.size();
  if (std::holds_alternative<std::string SweepOptions::*>(s.member)) return set_sweep_setting(s, o, nlohmann::json(text), prefix);
  if (std::holds_alternative<bool SweepOptions::*>(s.member)) {
    if (text != "true" && text != "false")
      throw lm::UsageError(cat(name, " must be true or false, got '", text::shown(text, 40), "'"));
    return set_sweep_setting(s, o, nlohmann::json(text == "true"), prefix);
  }
  if (std::holds_alternative<double SweepOptions::*>(s.member)) {
    double d = 0;
    const auto r = std::from_chars(text.data(), end, d);
    if (r.ec != std::errc() || r.ptr != end || !std::isfinite(d))
      throw lm::UsageError(cat(name, " must be a finite number, got '", text::shown(text, 40), "'"));
    return set_sweep_setting(s, o, nlohmann::json(d), prefix);
  }
  const std::string form = text::decimal_whole_number(text, /*sign=*/true);  // "010" is not 10, nor 8
  if (!form.empty()) throw lm::UsageError(cat(name, " '", text::shown(text, 40), "': ", form));
  int64_t i = 0;
  const auto r = std::from_chars(text.data(), end, i);
  if (r.ec != std::errc() || r.ptr != end)
    throw lm::UsageError(cat(name, " must be in [", bound(s.low), ", ", bound(s.high), "], got '", text::shown(text, 40), "'"));
  set_sweep_setting(s, o, nlohmann::json(i), prefix);
}

nlohmann::json shared_sweep_settings(const SweepOptions& o) {
  nlohmann::json j = nlohmann::json::object();
  for (const SweepSetting& s : sweep_settings())
    if (s.shared) j[s.key] = sweep_setting_json(s, o);
  return j;
}

void read_shared_sweep_settings(const nlohmann::json& j, SweepOptions& o, const std::string& where) {
  for (const SweepSetting& s : sweep_settings()) {
    if (!s.shared || !j.contains(s.key)) continue;  // older folders: the value given
    try {
      set_sweep_setting(s, o, j[s.key], "");
    } catch (const Error& e) {
      throw Error(cat(where, ": ", e.what()));
    }
  }
}

}  // namespace tapegrad::lab
