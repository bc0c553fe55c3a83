#include "tapegrad/text/tokenizer.h"

#include "tapegrad/error.h"
#include "tapegrad/text/bpe_tokenizer.h"
#include "tapegrad/text/char_tokenizer.h"

namespace tapegrad::text {

std::unique_ptr<Tokenizer> tokenizer_from_json(const nlohmann::json& j) {
  check(j.is_object() && j.contains("type") && j["type"].is_string(),
        "tokenizer JSON: expected an object with a \"type\" (char or bpe)");
  const std::string type = j["type"].get<std::string>();
  if (type == "char") return std::make_unique<CharTokenizer>(CharTokenizer::from_json(j));
  if (type == "bpe") return std::make_unique<BpeTokenizer>(BpeTokenizer::from_json(j));
  throw Error(cat("tokenizer JSON: unknown type '", type, "' (expected char or bpe)"));
}

}  // namespace tapegrad::text
