#include "tapegrad/text/lexical.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "tapegrad/error.h"

namespace tapegrad::text {

std::string decimal_whole_number(const std::string& v, bool sign) {
  const size_t start = sign && !v.empty() && v[0] == '-' ? 1 : 0;
  const std::string digits = v.substr(start);
  const bool ok = !digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos &&
                  (digits.size() == 1 || digits[0] != '0');
  return ok ? std::string()
            : cat("must be a whole number in decimal (", sign ? "an optional '-', then " : "",
                  "digits without leading zeros), got '", v.substr(0, 40), v.size() > 40 ? "...'" : "'");
}

std::string shell_quote(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_./:=+,@%-").find(c) != std::string_view::npos;
  });
  if (plain) return word;
  std::string q = "'";
  for (char c : word) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string exact_decimal(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%g", v);
  if (std::strtod(b, nullptr) != v) std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

std::string shown(std::string_view v, size_t max_bytes) {
  std::string out;
  for (size_t i = 0; i < v.size() && i < max_bytes; ++i) {
    const unsigned char c = static_cast<unsigned char>(v[i]);
    if (c == '\\') out += "\\\\";
    else if (c == 0) out += "\\0";
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c < 0x20 || c == 0x7f) {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (v.size() > max_bytes) out += "...";
  return out;
}

}  // namespace tapegrad::text
