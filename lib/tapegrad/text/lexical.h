// Lexical checks and quoting of words typed by people or read from files.
#pragma once

#include <string>
#include <string_view>

namespace tapegrad::text {

// A whole number as people write one in decimal: an optional '-' (when `sign`), then digits,
// without leading zeros. Returns an error message, or "" when `v` is one. CLI11 alone reads
// "010" as octal 8 and "0x10" as hex, and strtoll saturates "+99999999999999999999" to 2^63 - 1.
std::string decimal_whole_number(const std::string& v, bool sign);

// `word` as a POSIX shell reads it back verbatim: as is when it holds only [A-Za-z0-9_./:=+,@%-],
// otherwise in single quotes (a ' inside as '\''). For commands shown to be pasted.
std::string shell_quote(const std::string& word);

// `v` in the fewest of %g's digits that read back as the same double ("0.001", "3e-05",
// "0.10000000000000001" only when it must), for numbers handed to other programs as text.
std::string exact_decimal(double v);

// `v` for an error message: bytes below 0x20 and 0x7f written as escapes (\0, \n, \x1b), a
// backslash doubled, at most `max_bytes` of it shown (then "..."), so that what a message names
// is what was given, never a cut string or a terminal control sequence.
std::string shown(std::string_view v, size_t max_bytes = 200);

}  // namespace tapegrad::text
