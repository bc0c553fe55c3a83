// Errors: every problem a caller can cause is reported by throwing tapegrad::Error with a
// message that names the operation and the offending values (shapes, indices, file names).
// Library code never prints, never calls exit(), and never relies on assert() for input checks.
#pragma once

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

}  // namespace tapegrad
