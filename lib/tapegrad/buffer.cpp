#include "tapegrad/buffer.h"

#include <atomic>
#include <cstdint>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "tapegrad/error.h"

namespace tapegrad {

namespace {

constexpr int kMaxOffsetFloats = static_cast<int>(kBufferAlignment / sizeof(float)) - 1;
std::atomic<int> g_offset_floats{-1};  // -1: not yet read from the environment

int offset_from_environment() {
  const char* text = std::getenv("TAPEGRAD_BUFFER_OFFSET");
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  check(errno == 0 && *end == '\0' && v >= 0 && v <= kMaxOffsetFloats, "TAPEGRAD_BUFFER_OFFSET: '",
        std::string(text).substr(0, 40), "' is not a whole number of floats in 0..", kMaxOffsetFloats);
  return static_cast<int>(v);
}

}  // namespace

void set_buffer_offset_for_testing(int floats) {
  check(floats >= 0 && floats <= kMaxOffsetFloats, "set_buffer_offset_for_testing: ", floats,
        " is not in 0..", kMaxOffsetFloats);
  g_offset_floats.store(floats);
}

int buffer_offset_for_testing() {
  int v = g_offset_floats.load();
  if (v < 0) {
    static std::once_flag once;
    std::call_once(once, [] {
      int expected = -1;
      g_offset_floats.compare_exchange_strong(expected, offset_from_environment());
    });
    v = g_offset_floats.load();
  }
  return v;
}

// The block always starts on a line; the caller's pointer is `offset` bytes into it. Since the
// offset is below the line size, free_buffer finds the block's start by rounding down, whatever
// the offset was when the buffer was made.
std::size_t buffer_offset_bytes(std::size_t alignment) {
  const std::size_t bytes = static_cast<std::size_t>(buffer_offset_for_testing()) * sizeof(float);
  return bytes / alignment * alignment;
}

void* allocate_buffer(std::size_t bytes, std::size_t alignment) {
  const std::size_t offset = buffer_offset_bytes(alignment);
  if (bytes > static_cast<std::size_t>(-1) - kBufferAlignment) throw std::bad_array_new_length();
  auto* block = static_cast<std::byte*>(::operator new(bytes + offset, std::align_val_t{kBufferAlignment}));
  return block + offset;
}

void free_buffer(void* p) noexcept {
  if (p == nullptr) return;
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  ::operator delete(reinterpret_cast<void*>(address & ~(std::uintptr_t{kBufferAlignment} - 1)),
                    std::align_val_t{kBufferAlignment});
}

}  // namespace tapegrad
