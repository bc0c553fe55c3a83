#include "tapegrad/text/tokenizer.h"

#include "tapegrad/error.h"
#include "tapegrad/text/bpe_tokenizer.h"
#include "tapegrad/text/char_tokenizer.h"

namespace tapegrad::text {

std::unique_ptr<Tokenizer> tokenizer_from_json(const nlohmann::json& j, int64_t vocab_size) {
  check(j.is_object() && j.contains("type") && j["type"].is_string(),
        "tokenizer JSON: expected an object with a \"type\" (char or bpe)");
  const std::string type = j["type"].get<std::string>();
  std::unique_ptr<Tokenizer> t;
  if (type == "char") {
    t = std::make_unique<CharTokenizer>(CharTokenizer::from_json(j));
  } else if (type == "bpe") {
    const size_t merges = j.contains("merges") && j["merges"].is_array() ? j["merges"].size() : 0;
    check(vocab_size < 0 || static_cast<int64_t>(merges) + 256 == vocab_size, "tokenizer JSON: ", merges,
          " bpe merges make ", static_cast<int64_t>(merges) + 256, " tokens, but the model has a vocabulary of ", vocab_size);
    t = std::make_unique<BpeTokenizer>(BpeTokenizer::from_json(j));
  } else {
    throw Error(cat("tokenizer JSON: unknown type '", type, "' (expected char or bpe)"));
  }
  check(vocab_size < 0 || t->vocab_size() == vocab_size, "tokenizer JSON: ", t->vocab_size(),
        " tokens, but the model has a vocabulary of ", vocab_size);
  return t;
}

}  // namespace tapegrad::text
