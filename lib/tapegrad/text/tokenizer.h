// Tokenizer: text <-> token ids. The library registers two kinds:
//   char  one token per Unicode character of the training text (乒乓球 is three tokens)
//   bpe   byte-level byte-pair encoding: 256 byte tokens plus learned merges; any bytes encode
// Both round-trip exactly (decode(encode(s)) == s) and save to JSON. The registry is open
// (registry.h): a program registers its own kind before naming it (`--tokenizer word`) —
//   text::tokenizer_registry().add({.name = "word", .description = "...", .train = ..., .from_json = ...});
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tapegrad/registry.h"

namespace tapegrad::text {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::string type() const = 0;  // its registry name: "char", "bpe"
  virtual int64_t vocab_size() const = 0;
  // Throws an Error naming the offending character or byte offset when the text cannot be encoded.
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  // Throws an Error for ids outside [0, vocab_size).
  virtual std::string decode(std::span<const int32_t> ids) const = 0;
  virtual nlohmann::json to_json() const = 0;
};

struct TokenizerEntry {
  std::string name;         // Tokenizer::type(), the "type" of its JSON, the --tokenizer value
  std::string description;  // one line, for --help
  // Learns a tokenizer from `text` for a vocabulary of about `vocab_size` (--vocab-size; kinds
  // whose vocabulary is the text's, as char, ignore it). Errors name `what`, the text's source.
  std::unique_ptr<Tokenizer> (*train)(std::string_view text, int64_t vocab_size, const std::string& what) = nullptr;
  // Rebuilds one saved with to_json(); validates it. With vocab_size >= 0 (what the model that
  // uses it was built for), refuses before building one that is larger.
  std::unique_ptr<Tokenizer> (*from_json)(const nlohmann::json& j, int64_t vocab_size) = nullptr;
  int64_t min_vocab_size = 0;  // the least --vocab-size it accepts (bpe: its 256 byte tokens); 0: any
};

Registry<TokenizerEntry>& tokenizer_registry();

// Registers a kind of tokenizer; throws if the name is taken or malformed, or a function is missing.
const TokenizerEntry& register_tokenizer(TokenizerEntry entry);

// A tokenizer of kind `name` learned from `text` (TokenizerEntry::train); throws for an unknown kind.
std::unique_ptr<Tokenizer> train_tokenizer(std::string_view name, std::string_view text, int64_t vocab_size,
                                           const std::string& what);

// Rebuilds a tokenizer saved with to_json(), by its "type"; validates it and names what is wrong.
// With vocab_size >= 0 (what the model that uses it was built for), a tokenizer of another size is
// refused before it is built: a file may not ask for more than its config implies.
std::unique_ptr<Tokenizer> tokenizer_from_json(const nlohmann::json& j, int64_t vocab_size = -1);

}  // namespace tapegrad::text
