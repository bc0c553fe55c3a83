#include "tapegrad/arena.h"

#include "tapegrad/buffer.h"

#include <algorithm>
#include <new>

namespace tapegrad {

namespace {
constexpr std::size_t round_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }
constexpr std::size_t kMinBlockBytes = std::size_t{1} << 20;
}  // namespace

void Arena::FreeBytes::operator()(std::byte* p) const {
  ::operator delete(p, std::align_val_t{kAlignment});
}

void Arena::add_block(std::size_t min_bytes) {
  // Grow geometrically so a pass that keeps overflowing needs only O(log) new blocks.
  const std::size_t size = std::max({min_bytes, capacity(), kMinBlockBytes});
  Block b;
  b.memory.reset(static_cast<std::byte*>(::operator new(size, std::align_val_t{kAlignment})));
  b.size = size;
  blocks_.push_back(std::move(b));
  ++heap_allocations_;
}

void* Arena::allocate_bytes(std::size_t bytes, std::size_t alignment) {
  // Every allocation starts on a line, plus the test offset (buffer.h) that moves them all.
  const std::size_t offset = buffer_offset_bytes(alignment);
  bytes = round_up(std::max<std::size_t>(bytes, 1) + offset, kAlignment);
  while (current_ < blocks_.size() && blocks_[current_].used + bytes > blocks_[current_].size)
    ++current_;
  if (current_ == blocks_.size()) add_block(bytes);
  Block& b = blocks_[current_];
  void* p = b.memory.get() + b.used + offset;
  b.used += bytes;
  peak_ = std::max(peak_, bytes_in_use());
  return p;
}

void Arena::reset() {
  if (blocks_.size() > 1) {
    // The last pass needed more than one block: replace them all by one block of the peak size.
    const std::size_t need = std::max(peak_, capacity());
    blocks_.clear();
    add_block(need);
  }
  for (Block& b : blocks_) b.used = 0;
  current_ = 0;
}

void Arena::release() {
  blocks_.clear();
  current_ = 0;
}

std::size_t Arena::bytes_in_use() const {
  std::size_t n = 0;
  for (const Block& b : blocks_) n += b.used;
  return n;
}

std::size_t Arena::capacity() const {
  std::size_t n = 0;
  for (const Block& b : blocks_) n += b.size;
  return n;
}

}  // namespace tapegrad
