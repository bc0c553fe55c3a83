#include "tapegrad/text/char_tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "tapegrad/error.h"
#include "tapegrad/io/json.h"
#include "tapegrad/text/utf8.h"

namespace tapegrad::text {

namespace {
// "'é' (U+00E9)"; control characters are shown by code point only.
std::string describe(int32_t cp) {
  char code[16];
  std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(cp));
  return cp < 0x20 || cp == 0x7F ? std::string(code) : "'" + text::encode(cp) + "' (" + code + ")";
}
}  // namespace

CharTokenizer CharTokenizer::train(std::string_view corpus) {
  const std::vector<int32_t> cps = text::decode(corpus, "char tokenizer training text");
  check(!cps.empty(), "char tokenizer: the training text is empty");
  const std::set<int32_t> unique(cps.begin(), cps.end());
  return CharTokenizer(std::vector<int32_t>(unique.begin(), unique.end()));
}

CharTokenizer::CharTokenizer(std::vector<int32_t> code_points) : chars_(std::move(code_points)) {
  check(!chars_.empty(), "char tokenizer: empty vocabulary");
  for (size_t i = 0; i < chars_.size(); ++i) {
    check(i == 0 || chars_[i] > chars_[i - 1], "char tokenizer: vocabulary must be sorted and unique");
    ids_[chars_[i]] = static_cast<int32_t>(i);
  }
}

std::vector<int32_t> CharTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    int len;
    const char* why = "";
    const int32_t cp = decode_one(text, pos, len, &why);
    if (cp < 0) text::decode(text, "char tokenizer input");  // throws, naming the byte offset
    const auto it = ids_.find(cp);
    check(it != ids_.end(), "char tokenizer: character ", describe(cp), " at byte ", pos,
          " is not in the vocabulary (", chars_.size(), " characters, from the training text)");
    out.push_back(it->second);
    pos += static_cast<size_t>(len);
  }
  return out;
}

std::string CharTokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    check(ids[i] >= 0 && ids[i] < vocab_size(), "char tokenizer: id ", ids[i], " at position ", i,
          " is out of range [0, ", vocab_size(), ")");
    text::append(out, chars_[static_cast<size_t>(ids[i])]);
  }
  return out;
}

bool CharTokenizer::covers(std::string_view text) const {
  if (!is_valid(text)) return false;
  for (int32_t cp : text::decode(text))
    if (!ids_.count(cp)) return false;
  return true;
}

nlohmann::json CharTokenizer::to_json() const {
  std::vector<std::string> chars;
  for (int32_t cp : chars_) chars.push_back(text::encode(cp));
  return {{"type", "char"}, {"chars", chars}};
}

CharTokenizer CharTokenizer::from_json(const nlohmann::json& j) {
  check(j.is_object() && io::string_field(j, "type") == "char" && j.contains("chars") && j["chars"].is_array(),
        "char tokenizer JSON: expected {\"type\": \"char\", \"chars\": [...]}");
  std::vector<int32_t> cps;
  for (const auto& c : j["chars"]) {
    check(c.is_string(), "char tokenizer JSON: every entry of 'chars' must be a string");
    const auto one = text::decode(c.get<std::string>(), "char tokenizer JSON");
    check(one.size() == 1, "char tokenizer JSON: entry '", c.get<std::string>(), "' is not exactly one character");
    cps.push_back(one[0]);
  }
  return CharTokenizer(std::move(cps));
}

}  // namespace tapegrad::text
