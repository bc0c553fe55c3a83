// Byte-level BPE (Sennrich et al. 2016; GPT-2's byte-level variant). Tokens 0..255 are the
// bytes; each learned merge (a, b) -> 256 + rank joins two adjacent tokens. Any byte string
// encodes, so there are no unknown characters, and decode(encode(s)) == s for every input.
//
// Training, deterministic by construction:
//   1. Pre-split the text into chunks, as GPT-2 does, so merges never cross word boundaries:
//      an optional single leading space followed by a maximal run of one class — letters (ASCII
//      letters and every byte >= 0x80, so UTF-8 text such as Chinese stays together), digits, or
//      other symbols — or a run of whitespace (leaving its last space to the word after it).
//   2. Repeat until the vocabulary has vocab_size tokens (or no pair occurs twice): count every
//      adjacent pair of tokens over all chunks, and merge the most frequent. Ties go to the
//      smallest pair (a, b), comparing a first, then b.
// Encoding applies the learned merges to each chunk in rank order (lowest rank first).
#pragma once

#include <array>
#include <utility>

#include "tapegrad/text/tokenizer.h"

namespace tapegrad::text {

class BpeTokenizer : public Tokenizer {
 public:
  // What a merge list may ask for. Each merge concatenates two tokens, so n chained merges make a
  // token of 2^n bytes: 40 merges in 300 bytes of JSON would ask for a terabyte. Training never
  // makes a token longer than kMaxTokenBytes (it skips such pairs), and a loaded list must keep
  // every token within it and the whole vocabulary within kMaxVocabBytes.
  static constexpr int64_t kMaxTokenBytes = int64_t{1} << 10;
  static constexpr int64_t kMaxVocabBytes = int64_t{1} << 28;

  // vocab_size >= 256 (the byte alphabet), else an Error.
  static BpeTokenizer train(std::string_view corpus, int64_t vocab_size);
  explicit BpeTokenizer(std::vector<std::pair<int32_t, int32_t>> merges);

  std::string type() const override { return "bpe"; }
  int64_t vocab_size() const override { return 256 + static_cast<int64_t>(merges_.size()); }
  std::vector<int32_t> encode(std::string_view text) const override;
  std::string decode(std::span<const int32_t> ids) const override;
  nlohmann::json to_json() const override;  // {"type": "bpe", "merges": [[a, b], ...]}
  static BpeTokenizer from_json(const nlohmann::json& j);

  const std::vector<std::pair<int32_t, int32_t>>& merges() const { return merges_; }
  const std::string& token_bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }

  // The pre-tokenisation step, exposed for tests: chunk boundaries as [begin, end) byte ranges.
  static std::vector<std::pair<size_t, size_t>> chunks(std::string_view text);

 private:
  std::vector<std::pair<int32_t, int32_t>> merges_;  // rank -> (a, b)
  std::vector<std::string> bytes_;                   // id -> the bytes it stands for
};

}  // namespace tapegrad::text
