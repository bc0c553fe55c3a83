#include "support.h"
#include "tapegrad/text/bpe_tokenizer.h"

using namespace tapegrad;
using namespace tapegrad::text;

TEST_CASE("bpe: the hand-checked merge table of 'aaabdaaabac'", "[text]") {
  // Pairs: aa 4, ab 2, ...      -> merge (a, a) = 256       text Z a b d Z a b a c
  // Pairs: Za 2, ab 2 (tie)     -> the smaller pair wins: (97, 98) = 257 "ab"   -> Z Y d Z Y a c
  // Pairs: ZY 2                 -> merge (256, 257) = 258                        -> X d X a c
  // All pairs 1: no pair occurs twice, training stops with 259 tokens.
  const auto tok = BpeTokenizer::train("aaabdaaabac", 300);
  REQUIRE(tok.merges() == std::vector<std::pair<int32_t, int32_t>>{{'a', 'a'}, {'a', 'b'}, {256, 257}});
  CHECK(tok.vocab_size() == 259);
  CHECK(tok.token_bytes(258) == "aaab");
  CHECK(tok.encode("aaabdaaabac") == std::vector<int32_t>{258, 'd', 258, 'a', 'c'});
}

TEST_CASE("bpe: pre-tokenisation keeps a leading space with its word", "[text]") {
  const std::string s = "Hi  there, 42乒乓!\n";
  std::vector<std::string> parts;
  for (auto [b, e] : BpeTokenizer::chunks(s)) parts.push_back(s.substr(b, e - b));
  CHECK(parts == std::vector<std::string>{"Hi", " ", " there", ",", " 42", "乒乓", "!", "\n"});
}

TEST_CASE("bpe: deterministic, and exact round trips for any bytes", "[text]") {
  const std::string corpus = "the cat sat on the mat; the hat is flat. 乒乓球拍卖完了。乒乓球 🙂🙂 \x01\xFF\xFE end";
  const auto a = BpeTokenizer::train(corpus, 300), b = BpeTokenizer::train(corpus, 300);
  CHECK(a.merges() == b.merges());
  CHECK(a.vocab_size() > 256);
  for (const std::string& text : {std::string("the mat sat"), std::string("乒乓球拍卖完了。"), std::string("🙂 mixed é"),
                                 std::string("\x00\xFF\x80 raw bytes", 14), std::string("")}) {
    CHECK(a.decode(a.encode(text)) == text);
  }
  const auto reloaded = BpeTokenizer::from_json(nlohmann::json::parse(a.to_json().dump()));
  CHECK(reloaded.encode(corpus) == a.encode(corpus));
  CHECK(a.encode(corpus).size() < corpus.size());  // it compresses
}

TEST_CASE("bpe: a vocabulary below the byte alphabet is refused", "[text][errors]") {
  REQUIRE_THROWS_WITH(BpeTokenizer::train("abc", 200),
                      "bpe tokenizer: vocabulary size 200 is smaller than the 256-byte alphabet; choose at least 256");
  REQUIRE_THROWS_WITH(BpeTokenizer::from_json({{"type", "bpe"}, {"merges", {{97, 300}}}}),
                      Catch::Contains("refers to a token that does not exist yet"));
}
