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
                      "bpe tokenizer JSON: merge 0 [97,300] must pair two existing token ids (whole numbers < 256)");
  REQUIRE_THROWS_WITH(BpeTokenizer({{97, 300}}), Catch::Contains("refers to a token that does not exist yet"));
}

TEST_CASE("bpe: a merge list may not ask for more than a vocabulary's worth of bytes", "[text][errors]") {
  // Token 256 + i of this chain spells 2^(i + 1) bytes: 40 merges in ~300 bytes of JSON would ask
  // for a terabyte. The sizes are checked from the ids before anything is built.
  nlohmann::json bomb = nlohmann::json::array({{97, 97}});
  for (int i = 0; i < 39; ++i) bomb.push_back({256 + i, 256 + i});
  REQUIRE_THROWS_WITH(BpeTokenizer::from_json({{"type", "bpe"}, {"merges", bomb}}),
                      "bpe tokenizer: merge 10 (265, 265) makes a token of 2048 bytes; tokens are at most 1024 bytes "
                      "(a damaged or hostile merge list)");
  // Ids are read in 64 bits: 2^32 + 97 is not 97.
  REQUIRE_THROWS_WITH(BpeTokenizer::from_json({{"type", "bpe"}, {"merges", {{(uint64_t{1} << 32) + 97, 98}}}}),
                      Catch::Contains("merge 0 [4294967393,98] must pair two existing token ids (whole numbers < 256)"));
  REQUIRE_THROWS_WITH(BpeTokenizer::from_json({{"type", "bpe"}, {"merges", {{-1, 98}}}}),
                      Catch::Contains("must pair two existing token ids"));
  // ... and a loader that knows the model's vocabulary refuses a list of another length first.
  REQUIRE_THROWS_WITH(tokenizer_from_json({{"type", "bpe"}, {"merges", bomb}}, 260),
                      "tokenizer JSON: 40 bpe merges make 296 tokens, but the model has a vocabulary of 260");
}

TEST_CASE("bpe: training never makes a token longer than the loader accepts", "[text]") {
  // Two runs of 3000 letters: each doubling merge occurs twice, so an unbounded trainer would
  // build tokens of 2048 bytes and more.
  const std::string corpus = std::string(3000, 'a') + " " + std::string(3000, 'a');
  const auto tok = BpeTokenizer::train(corpus, 300);
  int64_t longest = 0;
  for (int32_t id = 0; id < tok.vocab_size(); ++id) longest = std::max<int64_t>(longest, std::ssize(tok.token_bytes(id)));
  CHECK(longest == BpeTokenizer::kMaxTokenBytes);
  CHECK(tok.decode(tok.encode(corpus)) == corpus);
  CHECK(BpeTokenizer::from_json(tok.to_json()).merges() == tok.merges());
}
