#include "tapegrad/text/bpe_tokenizer.h"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

#include "tapegrad/error.h"
#include "tapegrad/io/json.h"

namespace tapegrad::text {

namespace {

enum class ByteClass { kLetter, kDigit, kSpace, kOther };

ByteClass classify(unsigned char c) {
  if (c >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return ByteClass::kLetter;
  if (c >= '0' && c <= '9') return ByteClass::kDigit;
  if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') return ByteClass::kSpace;
  return ByteClass::kOther;
}

uint64_t pair_key(int32_t a, int32_t b) { return static_cast<uint64_t>(a) << 32 | static_cast<uint32_t>(b); }

// Replaces every (a, b) in `ids`, left to right, by `merged`.
void apply_merge(std::vector<int32_t>& ids, int32_t a, int32_t b, int32_t merged) {
  size_t out = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i + 1 < ids.size() && ids[i] == a && ids[i + 1] == b) {
      ids[out++] = merged;
      ++i;
    } else {
      ids[out++] = ids[i];
    }
  }
  ids.resize(out);
}

}  // namespace

std::vector<std::pair<size_t, size_t>> BpeTokenizer::chunks(std::string_view s) {
  std::vector<std::pair<size_t, size_t>> out;
  const auto cls = [&](size_t i) { return classify(static_cast<unsigned char>(s[i])); };
  const auto run_end = [&](size_t i) {  // end of the run of i's class starting at i
    const ByteClass c = cls(i);
    while (i < s.size() && cls(i) == c) ++i;
    return i;
  };
  size_t i = 0;
  while (i < s.size()) {
    const size_t begin = i;
    if (cls(i) != ByteClass::kSpace) {
      i = run_end(i);
    } else {
      const size_t j = run_end(i);  // j: the first non-whitespace byte, or the end
      if (j < s.size() && s[j - 1] == ' ') {
        // The run's last space leads the word after it (" there"); the rest is a chunk of its own.
        i = j - 1 > i ? j - 1 : run_end(j);
      } else {
        i = j;
      }
    }
    out.emplace_back(begin, i);
  }
  return out;
}

BpeTokenizer BpeTokenizer::train(std::string_view corpus, int64_t vocab_size) {
  check(vocab_size >= 256, "bpe tokenizer: vocabulary size ", vocab_size,
        " is smaller than the 256-byte alphabet; choose at least 256");
  // Unique chunks with their counts; each chunk as a sequence of token ids (initially bytes).
  std::map<std::string_view, int64_t> counts;
  for (const auto& [b, e] : chunks(corpus)) ++counts[corpus.substr(b, e - b)];
  std::vector<std::vector<int32_t>> words;
  std::vector<int64_t> freq;
  for (const auto& [w, n] : counts) {
    words.emplace_back(w.begin(), w.end());
    for (auto& id : words.back()) id = static_cast<unsigned char>(id);
    freq.push_back(n);
  }
  std::vector<std::pair<int32_t, int32_t>> merges;
  std::vector<int64_t> length(256, 1);  // bytes per token
  while (256 + static_cast<int64_t>(merges.size()) < vocab_size) {
    std::unordered_map<uint64_t, int64_t> pairs;
    for (size_t w = 0; w < words.size(); ++w)
      for (size_t i = 0; i + 1 < words[w].size(); ++i) pairs[pair_key(words[w][i], words[w][i + 1])] += freq[w];
    uint64_t best = 0;
    int64_t best_count = 0;
    for (const auto& [key, n] : pairs) {
      const bool fits = length[key >> 32] + length[key & 0xffffffffu] <= kMaxTokenBytes;
      if (fits && (n > best_count || (n == best_count && key < best))) best = key, best_count = n;
    }
    if (best_count < 2) break;  // nothing left that a merge would compress
    const auto a = static_cast<int32_t>(best >> 32), b = static_cast<int32_t>(best & 0xffffffffu);
    const auto merged = static_cast<int32_t>(256 + merges.size());
    for (auto& w : words) apply_merge(w, a, b, merged);
    merges.emplace_back(a, b);
    length.push_back(length[static_cast<size_t>(a)] + length[static_cast<size_t>(b)]);
  }
  return BpeTokenizer(std::move(merges));
}

BpeTokenizer::BpeTokenizer(std::vector<std::pair<int32_t, int32_t>> merges) : merges_(std::move(merges)) {
  check(merges_.size() <= static_cast<size_t>(std::numeric_limits<int32_t>::max() - 256), "bpe tokenizer: ",
        merges_.size(), " merges exceed the 32-bit token ids");
  // Sizes first, from the ids alone: a bomb is refused before anything is allocated.
  std::vector<int64_t> length(256, 1);
  int64_t total = 256;
  for (size_t r = 0; r < merges_.size(); ++r) {
    const auto [a, b] = merges_[r];
    const auto limit = static_cast<int32_t>(256 + r);
    check(a >= 0 && b >= 0 && a < limit && b < limit, "bpe tokenizer: merge ", r, " (", a, ", ", b,
          ") refers to a token that does not exist yet (ids must be < ", limit, ")");
    length.push_back(length[static_cast<size_t>(a)] + length[static_cast<size_t>(b)]);
    total += length.back();
    check(length.back() <= kMaxTokenBytes, "bpe tokenizer: merge ", r, " (", a, ", ", b, ") makes a token of ",
          length.back(), " bytes; tokens are at most ", kMaxTokenBytes, " bytes (a damaged or hostile merge list)");
    check(total <= kMaxVocabBytes, "bpe tokenizer: the merges spell ", total, " bytes in all; at most ", kMaxVocabBytes,
          " are allowed (a damaged or hostile merge list)");
  }
  bytes_.reserve(length.size());
  for (int i = 0; i < 256; ++i) bytes_.emplace_back(1, static_cast<char>(i));
  for (const auto& [a, b] : merges_) bytes_.push_back(bytes_[static_cast<size_t>(a)] + bytes_[static_cast<size_t>(b)]);
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text) const {
  std::unordered_map<uint64_t, int32_t> rank;
  rank.reserve(merges_.size());
  for (size_t r = 0; r < merges_.size(); ++r) rank[pair_key(merges_[r].first, merges_[r].second)] = static_cast<int32_t>(r);
  std::unordered_map<std::string_view, std::vector<int32_t>> cache;
  std::vector<int32_t> out;
  out.reserve(text.size() / 2);
  for (const auto& [b, e] : chunks(text)) {
    const std::string_view chunk = text.substr(b, e - b);
    auto it = cache.find(chunk);
    if (it == cache.end()) {
      std::vector<int32_t> ids;
      for (char c : chunk) ids.push_back(static_cast<unsigned char>(c));
      while (ids.size() > 1) {  // merge the lowest-ranked pair present, until none is
        int32_t best = std::numeric_limits<int32_t>::max();
        for (size_t i = 0; i + 1 < ids.size(); ++i) {
          const auto r = rank.find(pair_key(ids[i], ids[i + 1]));
          if (r != rank.end()) best = std::min(best, r->second);
        }
        if (best == std::numeric_limits<int32_t>::max()) break;
        apply_merge(ids, merges_[static_cast<size_t>(best)].first, merges_[static_cast<size_t>(best)].second, 256 + best);
      }
      it = cache.emplace(chunk, std::move(ids)).first;
    }
    out.insert(out.end(), it->second.begin(), it->second.end());
  }
  return out;
}

std::string BpeTokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    check(ids[i] >= 0 && ids[i] < vocab_size(), "bpe tokenizer: id ", ids[i], " at position ", i,
          " is out of range [0, ", vocab_size(), ")");
    out += bytes_[static_cast<size_t>(ids[i])];
  }
  return out;
}

nlohmann::json BpeTokenizer::to_json() const {
  nlohmann::json merges = nlohmann::json::array();
  for (const auto& [a, b] : merges_) merges.push_back({a, b});
  return {{"type", "bpe"}, {"merges", merges}};
}

BpeTokenizer BpeTokenizer::from_json(const nlohmann::json& j) {
  check(j.is_object() && io::string_field(j, "type") == "bpe" && j.contains("merges") && j["merges"].is_array(),
        "bpe tokenizer JSON: expected {\"type\": \"bpe\", \"merges\": [[a, b], ...]}");
  std::vector<std::pair<int32_t, int32_t>> merges;
  for (const auto& m : j["merges"]) {
    // Ids are checked in 64 bits before narrowing: 2^32 + a must not read as a.
    const auto id = [&](const nlohmann::json& v) {
      const int64_t limit = 256 + static_cast<int64_t>(merges.size());
      const bool exists = v.is_number_unsigned() ? v.get<uint64_t>() < static_cast<uint64_t>(limit)
                                                 : v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() < limit;
      check(exists, "bpe tokenizer JSON: merge ",
            merges.size(), " ", io::json_excerpt(m), " must pair two existing token ids (whole numbers < ", limit, ")");
      return static_cast<int32_t>(v.get<uint64_t>());
    };
    check(m.is_array() && m.size() == 2, "bpe tokenizer JSON: merge ", merges.size(), " must be a pair of integers, got ",
          io::json_excerpt(m));
    merges.emplace_back(id(m[0]), id(m[1]));
  }
  return BpeTokenizer(std::move(merges));
}

}  // namespace tapegrad::text
