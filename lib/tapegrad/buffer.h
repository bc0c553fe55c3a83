// Where float buffers start, and a test knob that moves them all.
//
// Bitwise determinism (same seed + same thread count → same losses) must not depend on where the
// allocator put the data: a vectorised kernel that peels elements up to the first aligned
// address, or blocks its work by address, computes some elements on another code path, and the
// run's last bits then follow the heap layout (glibc, ASan and another libc lay it out
// differently). Two defences, both here:
//   * every buffer tapegrad owns — Tensor storage and arena allocations — starts on a 64-byte
//     line, so kernels see the same layout on every allocator;
//   * the kernels themselves block by index only (vmath), and tests prove it: the buffer offset
//     below shifts every new buffer by a few floats off the line, and a run must not change one
//     bit (tests/lib/test_buffer_offset.cpp, tests/examples/determinism.sh).
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

namespace tapegrad {

inline constexpr std::size_t kBufferAlignment = 64;  // a cache line; one AVX-512 packet

// Every buffer allocated from now on starts `floats` floats (0..15) past a 64-byte line. For tests
// only; 0 is the default. The environment variable TAPEGRAD_BUFFER_OFFSET sets it for a whole
// program (read once, at the first allocation; a value outside 0..15 is an Error naming it).
void set_buffer_offset_for_testing(int floats);
int buffer_offset_for_testing();

// The current offset in bytes for an object of the given alignment: rounded down to a multiple
// of it (structs in the arena stay aligned; doubles move by even numbers of floats).
std::size_t buffer_offset_bytes(std::size_t alignment);

// `bytes` bytes, for objects of `alignment`, starting at the current buffer offset past a 64-byte
// line; release with free_buffer. Throws std::bad_alloc like operator new, and an Error when the
// process's buffers would outgrow the machine: a size from a user or a file (a Linear of 2^17 x
// 2^17, a model of width 65536) is refused with its numbers instead of the kernel's OOM killer
// ending the process while the weights are filled in.
void* allocate_buffer(std::size_t bytes, std::size_t alignment);
void free_buffer(void* p) noexcept;

// Bytes held by live buffers, and the most they may hold: 90 % of this machine's memory (the
// smaller of its physical memory and the cgroup's limit), leaving room for everything else.
int64_t buffer_bytes_live();
int64_t buffer_bytes_limit();

// std::allocator's interface over allocate_buffer, for std::vector storage.
template <typename T>
struct BufferAllocator {
  using value_type = T;
  BufferAllocator() = default;
  template <typename U>
  BufferAllocator(const BufferAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / 2 / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(allocate_buffer(n * sizeof(T), alignof(T)));
  }
  void deallocate(T* p, std::size_t) noexcept { free_buffer(p); }
  template <typename U>
  bool operator==(const BufferAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace tapegrad
