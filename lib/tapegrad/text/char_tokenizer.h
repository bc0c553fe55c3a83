// Character-level tokenizer: the vocabulary is the set of Unicode characters (code points) of the
// training text, sorted by code point; token id = rank in that order.
//
// Unknown characters: encode() throws an Error that names the character, its code point and its
// byte offset. There is no silent fallback — a model never saw that character, and mapping it to
// some other token would produce garbage without a word. Invalid UTF-8 is an error too.
#pragma once

#include <unordered_map>

#include "tapegrad/text/tokenizer.h"

namespace tapegrad::text {

class CharTokenizer : public Tokenizer {
 public:
  // The characters of `corpus` (valid UTF-8, else an Error naming the byte offset).
  static CharTokenizer train(std::string_view corpus);
  explicit CharTokenizer(std::vector<int32_t> code_points);  // sorted, unique

  std::string type() const override { return "char"; }
  int64_t vocab_size() const override { return static_cast<int64_t>(chars_.size()); }
  std::vector<int32_t> encode(std::string_view text) const override;
  std::string decode(std::span<const int32_t> ids) const override;
  nlohmann::json to_json() const override;  // {"type": "char", "chars": ["\n", " ", "!", ...]}
  static CharTokenizer from_json(const nlohmann::json& j);

  // True when every character of `text` is in the vocabulary.
  bool covers(std::string_view text) const;

 private:
  std::vector<int32_t> chars_;                 // id -> code point
  std::unordered_map<int32_t, int32_t> ids_;   // code point -> id
};

}  // namespace tapegrad::text
