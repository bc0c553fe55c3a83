// The interval a numeric setting may take, stated once where the setting is declared (the
// training settings in lm/settings.h, the model's fields in nn/decoder_config.h) and said in
// errors as people say it: "must be positive", "must be >= 0 (0: never)", "must be in (0, 100]".
#pragma once

#include <cmath>
#include <limits>
#include <string>

#include "tapegrad/error.h"

namespace tapegrad {

struct SettingRange {
  double low = -std::numeric_limits<double>::infinity(), high = std::numeric_limits<double>::infinity();
  bool low_open = false, high_open = false;
  std::string note{};  // follows the interval in the message: "(0 disables clipping)"

  bool contains(double x) const {
    return (low_open ? x > low : x >= low) && (high_open ? x < high : x <= high);
  }
  // "must be positive", "must be in (0, 100]", with the note after it.
  std::string text() const {
    const bool no_high = std::isinf(high);
    std::string t = low == 0 && low_open && no_high ? "must be positive"
                    : no_high                       ? cat("must be ", low_open ? "> " : ">= ", low)
                                                    : cat("must be in ", low_open ? "(" : "[", low, ", ", high, high_open ? ")" : "]");
    return note.empty() ? t : t + " " + note;
  }

  static SettingRange positive() { return {0, std::numeric_limits<double>::infinity(), true, false}; }
  static SettingRange at_least_zero(std::string note = {}) {
    return {0, std::numeric_limits<double>::infinity(), false, false, std::move(note)};
  }
};

}  // namespace tapegrad
