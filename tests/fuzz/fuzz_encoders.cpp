// libFuzzer harness: arbitrary bytes through both tokenizers.
//   bpe:  trained on the input (small vocabulary), must encode any bytes and decode them back
//         exactly; the same for a fixed tokenizer trained on ordinary text.
//   char: trained on the input; valid UTF-8 must round-trip exactly, invalid UTF-8 must throw.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "tapegrad/error.h"
#include "tapegrad/text/bpe_tokenizer.h"
#include "tapegrad/text/char_tokenizer.h"
#include "tapegrad/text/utf8.h"

using namespace tapegrad::text;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string s(reinterpret_cast<const char*>(data), size);
  static const BpeTokenizer fixed = BpeTokenizer::train("the cat sat on the mat, 乒乓球拍卖完了。 the end", 300);
  if (fixed.decode(fixed.encode(s)) != s) std::abort();
  if (size <= 4096) {  // training is quadratic-ish: keep each input fast
    const BpeTokenizer own = BpeTokenizer::train(s, 256 + 32);
    if (own.decode(own.encode(s)) != s) std::abort();
  }
  const bool valid = is_valid(s);
  try {
    const CharTokenizer ch = CharTokenizer::train(s);
    if (!valid) std::abort();  // accepted invalid UTF-8
    if (ch.decode(ch.encode(s)) != s) std::abort();
  } catch (const tapegrad::Error&) {
    if (valid && !s.empty()) std::abort();  // rejected valid text
  }
  return 0;
}
