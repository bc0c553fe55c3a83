#include "tapegrad/text/utf8.h"

#include <cstdio>

#include "tapegrad/error.h"

namespace tapegrad::text {

int32_t decode_one(std::string_view s, size_t pos, int& length, const char** error) {
  const auto fail = [&](const char* why, int len) {
    length = len;
    if (error) *error = why;
    return -1;
  };
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t b0 = byte(pos);
  if (b0 < 0x80) {
    length = 1;
    return b0;
  }
  int n;
  int32_t cp;
  if ((b0 & 0xE0) == 0xC0) n = 2, cp = b0 & 0x1F;
  else if ((b0 & 0xF0) == 0xE0) n = 3, cp = b0 & 0x0F;
  else if ((b0 & 0xF8) == 0xF0) n = 4, cp = b0 & 0x07;
  else return fail(b0 < 0xC0 ? "unexpected continuation byte" : "invalid lead byte", 1);
  if (pos + n > s.size()) return fail("truncated sequence", static_cast<int>(s.size() - pos));
  for (int i = 1; i < n; ++i) {
    const uint8_t b = byte(pos + i);
    if ((b & 0xC0) != 0x80) return fail("bad continuation byte", i + 1);
    cp = (cp << 6) | (b & 0x3F);
  }
  static constexpr int32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n]) return fail("overlong encoding", n);
  if (cp > 0x10FFFF) return fail("code point above U+10FFFF", n);
  if (cp >= 0xD800 && cp <= 0xDFFF) return fail("UTF-16 surrogate", n);
  length = n;
  return cp;
}

bool is_valid(std::string_view s, size_t* bad_offset) {
  for (size_t pos = 0; pos < s.size();) {
    int len;
    if (decode_one(s, pos, len) < 0) {
      if (bad_offset) *bad_offset = pos;
      return false;
    }
    pos += static_cast<size_t>(len);
  }
  return true;
}

namespace {
[[noreturn]] void throw_invalid(std::string_view s, size_t pos, int len, const char* why, std::string_view what) {
  std::string bytes;
  for (int i = 0; i < std::max(len, 1) && pos + i < s.size(); ++i) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "%s0x%02X", i ? " " : "", static_cast<uint8_t>(s[pos + i]));
    bytes += hex;
  }
  throw Error(cat(what, ": invalid UTF-8 at byte ", pos, " (", bytes, "): ", why));
}
}  // namespace

std::vector<int32_t> decode(std::string_view s, std::string_view what) {
  std::vector<int32_t> out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) {
    int len;
    const char* why = "";
    const int32_t cp = decode_one(s, pos, len, &why);
    if (cp < 0) throw_invalid(s, pos, len, why, what);
    out.push_back(cp);
    pos += static_cast<size_t>(len);
  }
  return out;
}

void append(std::string& out, int32_t cp) {
  check(cp >= 0 && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF), "utf8: ", cp, " is not a valid code point");
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string encode(int32_t cp) {
  std::string s;
  append(s, cp);
  return s;
}

std::vector<std::string> characters(std::string_view s, std::string_view what) {
  std::vector<std::string> out;
  for (int32_t cp : decode(s, what)) out.push_back(encode(cp));
  return out;
}

namespace {
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Whether `tail` is the start of a multi-byte sequence that more bytes could still complete:
// a lead byte followed by fewer continuation bytes than it announces, and nothing else.
bool may_complete(std::string_view tail) {
  const auto lead = static_cast<unsigned char>(tail[0]);
  const size_t need = lead >= 0xC2 && lead <= 0xDF ? 2 : lead >= 0xE0 && lead <= 0xEF ? 3 : lead >= 0xF0 && lead <= 0xF4 ? 4 : 0;
  if (tail.size() >= need) return false;
  for (size_t i = 1; i < tail.size(); ++i)
    if ((static_cast<unsigned char>(tail[i]) & 0xC0) != 0x80) return false;
  return true;
}
}  // namespace

std::string Utf8Stream::push(std::string_view bytes) {
  pending_.append(bytes);
  std::string out;
  size_t pos = 0;
  while (pos < pending_.size()) {
    int length = 0;
    if (decode_one(pending_, pos, length) >= 0) {
      out.append(pending_, pos, static_cast<size_t>(length));
      pos += static_cast<size_t>(length);
    } else if (may_complete(std::string_view(pending_).substr(pos))) {
      break;
    } else {
      out += kReplacement;
      ++pos;
    }
  }
  pending_.erase(0, pos);
  return out;
}

std::string Utf8Stream::finish() {
  std::string out;
  for (size_t i = 0; i < pending_.size(); ++i) out += kReplacement;
  pending_.clear();
  return out;
}

}  // namespace tapegrad::text
