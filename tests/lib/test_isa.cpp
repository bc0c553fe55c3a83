// Choosing the kernel variant (tapegrad/isa.h): names, what this CPU runs, and the errors.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "tapegrad/error.h"
#include "tapegrad/isa.h"

using namespace tapegrad;

TEST_CASE("isa: the active variant is the widest this CPU runs, or TAPEGRAD_ISA's", "[isa]") {
  const std::vector<Isa> runnable = runnable_isas();
  REQUIRE(!runnable.empty());
  CHECK(runnable.front() == Isa::baseline);
  const char* forced = std::getenv("TAPEGRAD_ISA");
  if (forced != nullptr && *forced != '\0') CHECK(isa_name(active_isa()) == forced);
  else CHECK(active_isa() == runnable.back());
  for (Isa isa : runnable) {
    CHECK(isa_compiled(isa));
    CHECK(isa_supported(isa));
    CHECK(parse_isa(isa_name(isa), "--isa") == isa);
  }
#if defined(__x86_64__)
  CHECK(runnable.size() >= 1);
  CHECK(isa_compiled(Isa::avx2));
  CHECK(isa_compiled(Isa::avx512));
#endif
}

TEST_CASE("isa: an unknown or unrunnable variant is an error naming it", "[isa]") {
  std::string runs;
  for (Isa isa : runnable_isas()) runs += (runs.empty() ? "" : ", ") + std::string(isa_name(isa));
  REQUIRE_THROWS_WITH(parse_isa("avx3", "TAPEGRAD_ISA"),
                      "TAPEGRAD_ISA 'avx3': unknown kernel variant; known: baseline, avx2, avx512 (this CPU runs: " +
                          runs + ")");
  for (Isa isa : {Isa::avx2, Isa::avx512}) {
    if (isa_supported(isa) && isa_compiled(isa)) continue;
    INFO(isa_name(isa));
    CHECK_THROWS_WITH(runnable_index(isa), Catch::Contains(std::string(isa_name(isa))) &&
                                               (Catch::Contains("this CPU lacks; it runs: " + runs) ||
                                                Catch::Contains("is not in this build")));
  }
  CHECK(runnable_index(Isa::baseline) == 0);
}
