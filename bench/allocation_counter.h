// Counts heap allocations made through operator new, by replacing the global operator new and
// delete. Include it in exactly one translation unit of a program (bench_step,
// tests/lib/test_allocations.cpp); allocations() is the running count.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace tapegrad::alloc_counter {
inline std::atomic<int64_t> count{0};
inline int64_t allocations() { return count.load(std::memory_order_relaxed); }
}  // namespace tapegrad::alloc_counter

void* operator new(std::size_t n) {
  tapegrad::alloc_counter::count.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a) {
  tapegrad::alloc_counter::count.fetch_add(1, std::memory_order_relaxed);
  const auto al = static_cast<std::size_t>(a);
  if (void* p = std::aligned_alloc(al, (n + al - 1) / al * al)) return p;
  throw std::bad_alloc();
}
// These deletes free what the news above malloc'ed; GCC, inlining them into a `delete` of a `new`
// expression, sees free() on a pointer from operator new and warns (-Wmismatched-new-delete).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop
