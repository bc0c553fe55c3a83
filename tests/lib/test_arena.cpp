#include "support.h"
#include "tapegrad/arena.h"

using namespace tapegrad;

TEST_CASE("arena: aligned allocations, consolidation on reset, then a flat heap", "[tape]") {
  Arena arena;
  // First pass overflows the 1 MiB first block and chains a second one.
  float* a = arena.allocate<float>(100);
  float* b = arena.allocate<float>(300000);
  float* c = arena.allocate<float>(3);
  CHECK(reinterpret_cast<uintptr_t>(a) % Arena::kAlignment == 0);
  CHECK(reinterpret_cast<uintptr_t>(b) % Arena::kAlignment == 0);
  CHECK(reinterpret_cast<uintptr_t>(c) % Arena::kAlignment == 0);
  CHECK(arena.heap_allocations() >= 2);
  const auto peak = arena.peak_bytes();
  arena.reset();
  // The blocks are folded into one that holds the whole pass; from then on the heap is flat.
  CHECK(arena.capacity() >= peak);
  const int64_t after_reset = arena.heap_allocations();
  for (int pass = 0; pass < 5; ++pass) {
    arena.allocate<float>(100);
    arena.allocate<float>(300000);
    arena.allocate<float>(3);
    arena.reset();
  }
  CHECK(arena.heap_allocations() == after_reset);
  CHECK(arena.bytes_in_use() == 0);
}
