#include "support.h"
#include "tapegrad/text/char_tokenizer.h"

using namespace tapegrad;
using namespace tapegrad::text;

TEST_CASE("char tokenizer: one token per character, Chinese included", "[text]") {
  const auto tok = CharTokenizer::train("乒乓球 ping pong");
  const auto ids = tok.encode("乒乓球");
  CHECK(ids.size() == 3);  // three characters, three tokens
  CHECK(tok.decode(ids) == "乒乓球");
  // ids are ranks by code point: ' ' < 'g' < ... < 乒 < 乓 < 球
  CHECK(tok.encode(" ")[0] == 0);
  CHECK(tok.vocab_size() == 9);  // ' ', g, i, n, o, p, 乒, 乓, 球
}

TEST_CASE("char tokenizer: exact round trips for ASCII, Chinese, emoji, mixed", "[text]") {
  const std::string text = GENERATE(std::string("Hello, World!\n"), std::string("乒乓球拍卖完了。"),
                                    std::string("🙂🚀 ok"), std::string("mixé 乒乓 🙂\t\"q\""));
  const auto tok = CharTokenizer::train(text);
  CHECK(tok.decode(tok.encode(text)) == text);
  const auto reloaded = CharTokenizer::from_json(nlohmann::json::parse(tok.to_json().dump()));
  CHECK(reloaded.encode(text) == tok.encode(text));
}

TEST_CASE("char tokenizer: unknown characters and invalid UTF-8 are errors, not garbage", "[text][errors]") {
  const auto tok = CharTokenizer::train("abc");
  REQUIRE_THROWS_WITH(tok.encode("abz"),
                      "char tokenizer: character 'z' (U+007A) at byte 2 is not in the vocabulary (3 characters, from the training text)");
  REQUIRE_THROWS_WITH(tok.encode("ab\xFF"), Catch::Contains("invalid UTF-8 at byte 2"));
  REQUIRE_THROWS_WITH(CharTokenizer::train("ok\xC3"), Catch::Contains("invalid UTF-8 at byte 2"));
  REQUIRE_THROWS_WITH(tok.decode(std::vector<int32_t>{0, 3}), "char tokenizer: id 3 at position 1 is out of range [0, 3)");
  CHECK_FALSE(tok.covers("abd"));
  CHECK(tok.covers("cab"));
}

TEST_CASE("char tokenizer: JSON with the wrong shape is rejected", "[text][errors]") {
  REQUIRE_THROWS_WITH(tokenizer_from_json({{"type", "word"}}), Catch::Contains("unknown type 'word'"));
  REQUIRE_THROWS_WITH(CharTokenizer::from_json({{"type", "char"}, {"chars", {"a", "bc"}}}),
                      Catch::Contains("'bc' is not exactly one character"));
  REQUIRE_THROWS_WITH(CharTokenizer::from_json({{"type", "char"}, {"chars", {"b", "a"}}}),
                      Catch::Contains("sorted and unique"));
}
