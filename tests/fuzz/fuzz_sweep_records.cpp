// libFuzzer harness: arbitrary bytes as a sweep folder's record (records/<id>.csv, runs.csv) and as
// a run's proof (records/<id>.json). A record must read or raise tapegrad::Error — names that would
// become paths, numbers in other spellings, overflowing values, wrong column counts, old headers —
// and a row that reads must give back its own run id.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tapegrad/lab/proof.h"
#include "tapegrad/lab/sweep.h"

#include "tapegrad/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    for (const auto& r : tapegrad::lab::parse_runs(text, "records/fuzz.csv"))
      if (r.spec.id().empty()) __builtin_trap();
  } catch (const tapegrad::Error&) {
  }
  try {
    (void)tapegrad::lab::parse_proof(text, "records/fuzz.json");
  } catch (const tapegrad::Error&) {
  }
  return 0;
}
