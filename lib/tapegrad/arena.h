// Arena: bump allocation for everything a forward/backward pass needs (activations, gradients,
// the small caches backward closures point to), released all at once by reset().
//
// The steady state is what matters: a training step allocates the same sequence of buffers every
// time. The first steps may overflow the current block and chain new ones; reset() then folds
// them into a single block as large as the peak, so from the next step on the whole pass is
// served from one block and the heap is never touched again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "tapegrad/error.h"

namespace tapegrad {

class Arena {
 public:
  static constexpr std::size_t kAlignment = 64;  // a cache line; also enough for AVX-512 loads
  static constexpr std::size_t kMaxBytes = std::size_t{1} << 60;

  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  Arena(Arena&&) = default;
  Arena& operator=(Arena&&) = default;

  // Uninitialised storage for n objects of a trivial type, aligned to kAlignment.
  template <typename U>
  U* allocate(int64_t n) {
    static_assert(std::is_trivially_destructible_v<U>, "arena memory is never destroyed");
    static_assert(alignof(U) <= kAlignment);
    check(n >= 0 && static_cast<std::size_t>(n) <= kMaxBytes / sizeof(U), "arena: cannot allocate ", n,
          " elements of ", sizeof(U), " bytes");
    return static_cast<U*>(allocate_bytes(static_cast<std::size_t>(n) * sizeof(U), alignof(U)));
  }
  // Forgets every allocation; keeps the memory (consolidated into one block).
  void reset();
  // Releases all memory.
  void release();

  std::size_t bytes_in_use() const;
  std::size_t capacity() const;
  std::size_t peak_bytes() const { return peak_; }
  // Number of blocks obtained from the heap over the arena's life: flat once warmed up.
  int64_t heap_allocations() const { return heap_allocations_; }

 private:
  struct FreeBytes {
    void operator()(std::byte* p) const;
  };
  struct Block {
    std::unique_ptr<std::byte, FreeBytes> memory;
    std::size_t size = 0;
    std::size_t used = 0;
  };
  void* allocate_bytes(std::size_t bytes, std::size_t alignment);
  void add_block(std::size_t min_bytes);

  std::vector<Block> blocks_;
  std::size_t current_ = 0;  // index of the block being filled
  std::size_t peak_ = 0;
  int64_t heap_allocations_ = 0;
};

}  // namespace tapegrad
