// Errors: every problem a caller can cause is reported by throwing tapegrad::Error with a
// message that names the operation and the offending values (shapes, indices, file names).
// Library code never prints, never calls exit(), and never relies on assert() for input checks.
#pragma once

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace tapegrad {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Concatenates its arguments with operator<< into one string: cat("matmul: ", a, " x ", b).
template <typename... Args>
std::string cat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

// Throws Error(cat(args...)) when `condition` is false. The message is only built on failure.
template <typename... Args>
inline void check(bool condition, Args&&... args) {
  if (!condition) [[unlikely]]
    throw Error(cat(std::forward<Args>(args)...));
}

// A real-valued option that must be finite and >= 0 (kNonNegative) or > 0 (kPositive): throws
// "<what> must be a finite number >= 0, got nan". NaN and infinity never pass (a bare `v >= 0`
// lets infinity through, and `!(v < 0)` lets NaN through).
enum class Bound { kNonNegative, kPositive };
template <typename... What>
inline void check_finite(double v, Bound bound, What&&... what) {
  const bool positive = bound == Bound::kPositive;
  if (!(std::isfinite(v) && (positive ? v > 0 : v >= 0))) [[unlikely]]
    throw Error(cat(std::forward<What>(what)..., " must be a finite number ", positive ? "> 0" : ">= 0", ", got ", v));
}

}  // namespace tapegrad
