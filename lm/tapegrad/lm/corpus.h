// The embedded default corpus: "tapegrad tales", ~250 KB of text that tapegrad writes itself from
// a seeded grammar, so every program works out of the box with no file and no network.
//
// Tales mix English narrative with agreement (one fox runs / two foxes run), dialogue with
// quotes, Chinese sentences (小明今天在公园打乒乓球。), the seed sentence 乒乓球拍卖完了。 and
// small arithmetic facts — structure at several scales (spelling, grammar, a tale's cast, sums)
// for a small model to learn. The same bytes every time (fixed seed); default_corpus_sha256()
// pins them in a test.
#pragma once

#include <string>

namespace tapegrad::lm {

const std::string& default_corpus();

}  // namespace tapegrad::lm
