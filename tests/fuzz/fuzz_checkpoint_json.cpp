// libFuzzer harness: arbitrary bytes as the JSON of a checkpoint's model and training configs.
// They must load or raise tapegrad::Error — including values that are out of range, of the wrong
// type, or huge (a config asking for a 10^12-parameter model must be rejected or validated,
// never allocated here).
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "fuzz_json.h"

#include "tapegrad/error.h"
#include "tapegrad/nn/decoder_config.h"
#include "tapegrad/lm/train_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parsed = parse_json(data, size);
  if (!parsed) return 0;
  const nlohmann::json& j = *parsed;
  try {
    (void)tapegrad::nn::decoder_config_from_json(j);
  } catch (const tapegrad::Error&) {
  }
  try {
    (void)tapegrad::lm::train_config_from_json(j);
  } catch (const tapegrad::Error&) {
  }
  return 0;
}
