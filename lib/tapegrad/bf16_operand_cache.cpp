#include "tapegrad/bf16_operand_cache.h"

#include <thread>

#include "tapegrad/parallel.h"

namespace tapegrad {

namespace {
thread_local Bf16OperandCache* t_cache = nullptr;

void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}
}  // namespace

void Bf16OperandCache::SpinLock::lock() {
  while (held_.test_and_set(std::memory_order_acquire)) spin_pause();
}

void Bf16OperandCache::invalidate() {
  const std::lock_guard lock(mutex_);
  for (Entry& e : entries_) e.state.store(kUnmade, std::memory_order_relaxed);
}

Bf16OperandCache::Entry& Bf16OperandCache::entry(const Bf16OperandKey& key) {
  Entry* spare = nullptr;
  for (Entry& e : entries_) {
    if (e.key == key) return e;
    if (e.state.load(std::memory_order_relaxed) == kUnmade && spare == nullptr) spare = &e;
  }
  // A new key: most steps ask for the same ones, so the weights' entries are found above; a model
  // whose weights moved reuses the memory of forms this step has not asked for.
  if (spare == nullptr) spare = &entries_.emplace_back();
  spare->key = key;
  return *spare;
}

void Bf16OperandCache::make(Entry& e, int64_t bytes, const std::function<void(int64_t)>& fill_chunk) {
  const auto claim = [&] {
    for (int64_t c = e.next.fetch_add(1, std::memory_order_relaxed); c < e.chunks;
         c = e.next.fetch_add(1, std::memory_order_relaxed)) {
      fill_chunk(c);
      e.done.fetch_add(1, std::memory_order_release);
    }
  };
  // Outside a parallel region the pool's threads join in (parallel_for runs one body per thread
  // here: each claims chunks); inside one, or for a small form, this thread claims alone.
  constexpr int64_t kShareBytes = int64_t{1} << 16;
  if (bytes >= kShareBytes && e.chunks > 1) {
    parallel_for(num_threads(), kMinParallelWork, [&](int64_t, int64_t) { claim(); });
  } else {
    claim();
  }
  while (e.done.load(std::memory_order_acquire) < e.chunks) spin_pause();
  int expected = kMaking;  // the first to see every chunk written says so
  e.state.compare_exchange_strong(expected, kMade, std::memory_order_release, std::memory_order_relaxed);
}

UseBf16OperandCache::UseBf16OperandCache(Bf16OperandCache* cache) : previous_(t_cache) { t_cache = cache; }

UseBf16OperandCache::~UseBf16OperandCache() { t_cache = previous_; }

Bf16OperandCache* bf16_operand_cache() { return t_cache; }

}  // namespace tapegrad
