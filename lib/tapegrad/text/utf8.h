// UTF-8 decoding and encoding (RFC 3629): code points U+0000..U+10FFFF except the surrogates
// U+D800..U+DFFF, each in its shortest encoding. Invalid input is reported with the byte offset
// and the reason — never replaced silently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tapegrad::text {

// Decodes the code point starting at s[pos]; sets `length` to its byte length. Returns -1 and
// sets `error` (when given) for an invalid sequence.
int32_t decode_one(std::string_view s, size_t pos, int& length, const char** error = nullptr);

// All code points of s; throws Error("invalid UTF-8 at byte 17 (0xC3 0x28): bad continuation
// byte") on the first invalid sequence. `what` names the input in the message (e.g. a file).
std::vector<int32_t> decode(std::string_view s, std::string_view what = "input");

// True when s is valid UTF-8; otherwise the offset of the first bad byte goes to *bad_offset.
bool is_valid(std::string_view s, size_t* bad_offset = nullptr);

// Appends the UTF-8 encoding of a valid code point.
void append(std::string& out, int32_t code_point);
std::string encode(int32_t code_point);

// Splits s into its characters, each as its UTF-8 bytes ("乒乓" -> {"乒", "乓"}). Throws on
// invalid input like decode().
std::vector<std::string> characters(std::string_view s, std::string_view what = "input");

// Bytes that arrive in pieces — a byte-level BPE token may end inside a character — as valid
// UTF-8: push() returns the complete characters so far and keeps an unfinished sequence for the
// next piece; a byte that cannot start or continue a valid sequence becomes U+FFFD (one per
// byte), as does a sequence still unfinished at finish(). Valid input passes through unchanged.
class Utf8Stream {
 public:
  std::string push(std::string_view bytes);
  std::string finish();

 private:
  std::string pending_;
};

}  // namespace tapegrad::text
