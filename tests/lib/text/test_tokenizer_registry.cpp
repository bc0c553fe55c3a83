// The tokenizer registry is open: a kind registered by the program's own code is trained and
// restored by name like char and bpe; bad registrations and unknown names are refused by name.
#include "support.h"
#include "tapegrad/text/tokenizer.h"

using namespace tapegrad;
using namespace tapegrad::text;

namespace {

// Lower-case ASCII letters and the space, 27 tokens: a toy a program might register.
class LetterTokenizer : public Tokenizer {
 public:
  std::string type() const override { return "test-letters"; }
  int64_t vocab_size() const override { return 27; }
  std::vector<int32_t> encode(std::string_view s) const override {
    std::vector<int32_t> ids;
    for (const char c : s) {
      check(c == ' ' || (c >= 'a' && c <= 'z'), "letters tokenizer: '", std::string(1, c), "' is not a letter");
      ids.push_back(c == ' ' ? 26 : c - 'a');
    }
    return ids;
  }
  std::string decode(std::span<const int32_t> ids) const override {
    std::string s;
    for (const int32_t id : ids) s += id == 26 ? ' ' : static_cast<char>('a' + id);
    return s;
  }
  nlohmann::json to_json() const override { return {{"type", "test-letters"}}; }
};

const TokenizerEntry& letters() {
  static const TokenizerEntry& e = register_tokenizer(
      {.name = "test-letters",
       .description = "a-z and the space",
       .train = [](std::string_view, int64_t, const std::string&) -> std::unique_ptr<Tokenizer> {
         return std::make_unique<LetterTokenizer>();
       },
       .from_json = [](const nlohmann::json&, int64_t) -> std::unique_ptr<Tokenizer> {
         return std::make_unique<LetterTokenizer>();
       }});
  return e;
}

}  // namespace

TEST_CASE("tokenizer registry: the built-in kinds, trained and restored by name", "[text][registry]") {
  CHECK(tokenizer_registry().names() == std::vector<std::string>{"char", "bpe"});
  const auto c = train_tokenizer("char", "abba", 0, "the text");
  CHECK(c->type() == "char");
  CHECK(c->vocab_size() == 2);
  const auto b = train_tokenizer("bpe", "abab abab", 258, "the text");
  CHECK(b->type() == "bpe");
  CHECK(b->vocab_size() == 258);
  CHECK(tokenizer_from_json(b->to_json(), 258)->encode("abab") == b->encode("abab"));
  REQUIRE_THROWS_WITH(train_tokenizer("char", std::string("a\0b", 3), 0, "data.txt"),
                      Catch::StartsWith("data.txt: NUL byte at offset 1"));
}

TEST_CASE("tokenizer registry: a registered kind is trained and restored by name", "[text][registry]") {
  const TokenizerEntry& e = letters();
  CHECK(&e == tokenizer_registry().find("test-letters"));
  const auto t = train_tokenizer("test-letters", "any text", 0, "the text");
  CHECK(t->encode("ab z") == std::vector<int32_t>{0, 1, 26, 25});
  const auto back = tokenizer_from_json(t->to_json(), 27);
  CHECK(back->type() == "test-letters");
  CHECK(back->decode(back->encode("the fox")) == "the fox");
  // The model's vocabulary must still match.
  REQUIRE_THROWS_WITH(tokenizer_from_json(t->to_json(), 30), "tokenizer JSON: 27 tokens, but the model has a vocabulary of 30");
}

TEST_CASE("tokenizer registry: unknown kinds and bad registrations are refused, by name", "[text][registry]") {
  letters();
  REQUIRE_THROWS_WITH(train_tokenizer("word", "x", 0, "t"), "unknown tokenizer 'word'; known: " + tokenizer_registry().known());
  REQUIRE_THROWS_WITH(tokenizer_from_json({{"type", "word"}}),
                      "tokenizer JSON: unknown type 'word' (expected " + tokenizer_registry().known() + ")");
  REQUIRE_THROWS_WITH(register_tokenizer({.name = "test-empty", .description = "nothing"}),
                      "tokenizer 'test-empty': train and from_json are both needed");
  REQUIRE_THROWS_WITH(register_tokenizer({.name = "char", .description = "again", .train = letters().train,
                                          .from_json = letters().from_json}),
                      Catch::StartsWith("tokenizer name 'char' is taken"));
}
