// Tokenizer: text <-> token ids. Two kinds:
//   char  one token per Unicode character of the training text (乒乓球 is three tokens)
//   bpe   byte-level byte-pair encoding: 256 byte tokens plus learned merges; any bytes encode
// Both round-trip exactly (decode(encode(s)) == s) and save to JSON.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tapegrad::text {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::string type() const = 0;  // "char" or "bpe"
  virtual int64_t vocab_size() const = 0;
  // Throws an Error naming the offending character or byte offset when the text cannot be encoded.
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  // Throws an Error for ids outside [0, vocab_size).
  virtual std::string decode(std::span<const int32_t> ids) const = 0;
  virtual nlohmann::json to_json() const = 0;
};

// Rebuilds a tokenizer saved with to_json(); validates it and names what is wrong. With
// vocab_size >= 0 (what the model that uses it was built for), a tokenizer of another size is
// refused before it is built: a file may not ask for more than its config implies.
std::unique_ptr<Tokenizer> tokenizer_from_json(const nlohmann::json& j, int64_t vocab_size = -1);

}  // namespace tapegrad::text
