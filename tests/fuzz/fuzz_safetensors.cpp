// libFuzzer harness: arbitrary bytes as a safetensors file. Either parse() accepts them — and then
// every tensor it lists can be copied out — or it throws tapegrad::Error. Anything else (a crash,
// a sanitizer report, another exception type, a hang) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tapegrad/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto st = tapegrad::io::Safetensors::parse(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    for (const auto& e : st.entries()) {
      if (e.dtype == "F32") (void)st.get<float>(e.name);
      if (e.dtype == "F64") (void)st.get<double>(e.name);
    }
  } catch (const tapegrad::Error&) {
  }
  return 0;
}
