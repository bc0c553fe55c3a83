#include "tapegrad/lm/usage_error.h"

#include "tapegrad/lm/settings.h"

namespace tapegrad::lm {

std::string render_settings(std::string_view message, std::string_view prefix) {
  std::string out;
  size_t at = 0;
  while (at < message.size()) {
    const size_t open = message.find('{', at);
    if (open == std::string_view::npos) break;
    const size_t close = message.find('}', open);
    if (close == std::string_view::npos) break;
    const std::string_view key = message.substr(open + 1, close - open - 1);
    out += message.substr(at, open - at);
    // Only the table's keys are markers: a value quoted in the message keeps its braces.
    if (find_setting(key)) out += cat(prefix, key);
    else out += message.substr(open, close - open + 1);
    at = close + 1;
  }
  out += message.substr(at);
  return out;
}

SettingError::SettingError(std::string message)
    : UsageError(render_settings(message, "")), message_(std::move(message)) {}

std::string SettingError::flags() const { return render_settings(message_, "--"); }

}  // namespace tapegrad::lm
