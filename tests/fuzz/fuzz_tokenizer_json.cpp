// libFuzzer harness: arbitrary bytes as a saved tokenizer. Invalid JSON or an invalid tokenizer
// must be an Error; a tokenizer that loads must round-trip text it can encode exactly.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "fuzz_json.h"
#include <string>

#include "tapegrad/error.h"
#include "tapegrad/text/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parsed = parse_json(data, size);
  if (!parsed) return 0;
  const nlohmann::json& j = *parsed;
  try {
    const auto tok = tapegrad::text::tokenizer_from_json(j);
    const std::string probe = "hello 乒乓";
    std::vector<int32_t> ids;
    try {
      ids = tok->encode(probe);
    } catch (const tapegrad::Error&) {
      return 0;  // a char tokenizer without these characters: a clear error is right
    }
    if (tok->decode(ids) != probe) std::abort();  // round trip broken: a real bug
  } catch (const tapegrad::Error&) {
  }
  return 0;
}
