#include "tapegrad/text/tokenizer.h"

#include <cstring>

#include "tapegrad/error.h"
#include "tapegrad/text/bpe_tokenizer.h"
#include "tapegrad/text/char_tokenizer.h"
#include "tapegrad/text/utf8.h"

namespace tapegrad::text {

namespace {

std::unique_ptr<Tokenizer> train_char(std::string_view text, int64_t, const std::string& what) {
  if (const void* nul = std::memchr(text.data(), 0, text.size()))
    throw Error(cat(what, ": NUL byte at offset ", static_cast<const char*>(nul) - text.data(),
                    ": this looks like a binary file, not UTF-8 text (the bpe tokenizer accepts any bytes)"));
  decode(text, what);  // names the byte offset of invalid UTF-8
  return std::make_unique<CharTokenizer>(CharTokenizer::train(text));
}

std::unique_ptr<Tokenizer> char_from_json(const nlohmann::json& j, int64_t) {
  return std::make_unique<CharTokenizer>(CharTokenizer::from_json(j));
}

std::unique_ptr<Tokenizer> train_bpe(std::string_view text, int64_t vocab_size, const std::string&) {
  return std::make_unique<BpeTokenizer>(BpeTokenizer::train(text, vocab_size));
}

std::unique_ptr<Tokenizer> bpe_from_json(const nlohmann::json& j, int64_t vocab_size) {
  const size_t merges = j.contains("merges") && j["merges"].is_array() ? j["merges"].size() : 0;
  check(vocab_size < 0 || static_cast<int64_t>(merges) + 256 == vocab_size, "tokenizer JSON: ", merges,
        " bpe merges make ", static_cast<int64_t>(merges) + 256, " tokens, but the model has a vocabulary of ", vocab_size);
  return std::make_unique<BpeTokenizer>(BpeTokenizer::from_json(j));
}

}  // namespace

Registry<TokenizerEntry>& tokenizer_registry() {
  static Registry<TokenizerEntry>* const registry = [] {
    auto* r = new Registry<TokenizerEntry>("tokenizer");  // never destroyed: handles outlive static destructors
    r->add({.name = "char",
            .description = "one token per Unicode character of the training text",
            .train = train_char,
            .from_json = char_from_json});
    r->add({.name = "bpe",
            .description = "byte-level byte-pair encoding: 256 byte tokens plus merges learned up to --vocab-size",
            .train = train_bpe,
            .from_json = bpe_from_json,
            .min_vocab_size = 256});
    return r;
  }();
  return *registry;
}

const TokenizerEntry& register_tokenizer(TokenizerEntry entry) {
  check(entry.train && entry.from_json, "tokenizer '", entry.name.substr(0, 64), "': train and from_json are both needed");
  return tokenizer_registry().add(std::move(entry));
}

std::unique_ptr<Tokenizer> train_tokenizer(std::string_view name, std::string_view text, int64_t vocab_size,
                                           const std::string& what) {
  return tokenizer_registry().at(name).train(text, vocab_size, what);
}

std::unique_ptr<Tokenizer> tokenizer_from_json(const nlohmann::json& j, int64_t vocab_size) {
  const Registry<TokenizerEntry>& registry = tokenizer_registry();
  check(j.is_object() && j.contains("type") && j["type"].is_string(),
        "tokenizer JSON: expected an object with a \"type\" (", registry.known(), ")");
  const std::string type = j["type"].get<std::string>();
  const TokenizerEntry* e = registry.find(type);
  check(e != nullptr, "tokenizer JSON: unknown type '", type.substr(0, 64), "' (expected ", registry.known(), ")");
  std::unique_ptr<Tokenizer> t = e->from_json(j, vocab_size);
  check(vocab_size < 0 || t->vocab_size() == vocab_size, "tokenizer JSON: ", t->vocab_size(),
        " tokens, but the model has a vocabulary of ", vocab_size);
  return t;
}

}  // namespace tapegrad::text
