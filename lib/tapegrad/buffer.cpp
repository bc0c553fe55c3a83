#include "tapegrad/buffer.h"

#include <atomic>
#include <cstdint>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include <unistd.h>

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

namespace {

std::atomic<int64_t> g_live_bytes{0};

// The smaller of physical memory and the cgroup v2 limit ("max" or absent: none).
int64_t machine_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  int64_t bytes = pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : int64_t{1} << 40;
  if (std::FILE* f = std::fopen("/sys/fs/cgroup/memory.max", "re")) {
    unsigned long long limit = 0;
    if (std::fscanf(f, "%llu", &limit) == 1 && limit > 0 && limit < static_cast<unsigned long long>(bytes))
      bytes = static_cast<int64_t>(limit);
    std::fclose(f);
  }
  return bytes;
}

}  // namespace

int64_t buffer_bytes_live() { return g_live_bytes.load(std::memory_order_relaxed); }

int64_t buffer_bytes_limit() {
  static const int64_t limit = machine_memory_bytes() / 10 * 9;
  return limit;
}

// Layout of a block: one header line holding the block's size (so free_buffer can count it back),
// then the offset, then the caller's bytes. The caller's pointer is `offset` (< a line) past a line.
void* allocate_buffer(std::size_t bytes, std::size_t alignment) {
  const std::size_t offset = buffer_offset_bytes(alignment);
  if (bytes > static_cast<std::size_t>(INT64_MAX) - 2 * kBufferAlignment) throw std::bad_array_new_length();
  const std::size_t total = bytes + offset + kBufferAlignment;
  const auto signed_total = static_cast<int64_t>(total);
  const int64_t live = g_live_bytes.fetch_add(signed_total, std::memory_order_relaxed) + signed_total;
  if (live > buffer_bytes_limit()) {
    g_live_bytes.fetch_sub(signed_total, std::memory_order_relaxed);
    throw Error(cat("cannot allocate ", bytes >> 20, " MiB: this process's tensors would take ", live >> 20,
                    " MiB, more than ", buffer_bytes_limit() >> 20, " MiB (90 % of this machine's memory); a size given "
                    "is too large for this machine"));
  }
  std::byte* block = nullptr;
  try {
    block = static_cast<std::byte*>(::operator new(total, std::align_val_t{kBufferAlignment}));
  } catch (...) {
    g_live_bytes.fetch_sub(signed_total, std::memory_order_relaxed);
    throw;
  }
  std::memcpy(block, &total, sizeof total);
  return block + kBufferAlignment + offset;
}

void free_buffer(void* p) noexcept {
  if (p == nullptr) return;
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  auto* block = reinterpret_cast<std::byte*>(address & ~(std::uintptr_t{kBufferAlignment} - 1)) - kBufferAlignment;
  std::size_t total = 0;
  std::memcpy(&total, block, sizeof total);
  g_live_bytes.fetch_sub(static_cast<int64_t>(total), std::memory_order_relaxed);
  ::operator delete(block, std::align_val_t{kBufferAlignment});
}

}  // namespace tapegrad
