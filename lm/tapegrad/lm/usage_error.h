// UsageError: a setting a user gave that cannot work (--heads that does not divide --dim, a
// batch that does not divide among the ranks). Programs report it like a bad flag, exit status 2;
// every other Error is a runtime failure, exit status 1.
#pragma once

#include "tapegrad/error.h"

namespace tapegrad::lm {

class UsageError : public tapegrad::Error {
 public:
  using tapegrad::Error::Error;
};

}  // namespace tapegrad::lm
