// UsageError: a setting a user gave that cannot work (heads that do not divide dim, a batch that
// does not divide among the ranks). Programs report it like a bad flag, exit status 2; every
// other Error is a runtime failure, exit status 1.
//
// SettingError, the training layer's own: its message names each setting it is about as {key}
// ("{heads} 3 does not divide {dim} 128"). what() reads them as the settings' names ("heads 3
// does not divide dim 128": library code, config files, bindings), flags() as flags ("--heads 3
// does not divide --dim 128": what train_lm and compare_norms print).
#pragma once

#include <string>
#include <string_view>

#include "tapegrad/error.h"

namespace tapegrad::lm {

class UsageError : public tapegrad::Error {
 public:
  using tapegrad::Error::Error;
};

class SettingError : public UsageError {
 public:
  explicit SettingError(std::string message);
  const std::string& message() const { return message_; }  // with its {key} markers
  std::string flags() const;

 private:
  std::string message_;
};

// `message` with each {key} of a known setting written as prefix + key ("--" for flags, "" for names).
std::string render_settings(std::string_view message, std::string_view prefix);

}  // namespace tapegrad::lm
