// Checked arithmetic for sizes that come from users or files: a product that would overflow is an
// Error naming what was being sized, never a wrapped value (undefined behaviour, then a buffer of
// the wrong size).
#pragma once

#include <cstdint>

#include "tapegrad/error.h"

namespace tapegrad {

inline int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t r = 0;
  check(!__builtin_mul_overflow(a, b, &r), what, ": ", a, " x ", b, " overflows a 64-bit size");
  return r;
}

inline int64_t checked_add(int64_t a, int64_t b, const char* what) {
  int64_t r = 0;
  check(!__builtin_add_overflow(a, b, &r), what, ": ", a, " + ", b, " overflows a 64-bit size");
  return r;
}

}  // namespace tapegrad
