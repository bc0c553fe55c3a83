// The bf16 forms of a step's weights, made once per step rather than once per GEMM call.
//
// Every bf16 GEMM rounds its operands (emulated path) or rounds and packs them into k-pair panels
// (amx, avx512_bf16): gemm_bf16.h. A Linear's weight W is an operand three times a step in each batch
// worker (y = x W^T and dx = dy W, each worker on its own rows) and holds still from the forward
// to the optimizer step. So, as PyTorch's autocast caches the bf16 casts of its weights for the
// length of an autocast region, a training step owns a cache: the first GEMM to need W's form
// (rounded, or packed for a kernel) makes it, every other call and worker of the step reads it.
//
// Correct only while the cached operands hold still: the owner invalidates the cache whenever they
// may have changed (lm::BatchParallelStep: at the start of every forward-backward, after the previous
// optimizer step), and a GEMM consults it only when its caller says the operand is constant
// (nn::Linear's weight) and the calling thread has a cache in use. Outside such a scope nothing is
// cached, so a hand-written loop that edits its weights between GEMMs is never served a stale form.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>  // std::lock_guard
#include <vector>

namespace tapegrad {

// Which form of an operand: the kernels' layouts differ.
enum class Bf16Form : uint8_t { kRounded, kAmxPanels, kAvx512Panels };

// An operand as a GEMM reads it: rows x cols of op(X) at x, leading dimension ld, stored transposed or not.
struct Bf16OperandKey {
  const float* x = nullptr;
  int64_t ld = 0, rows = 0, cols = 0;
  bool trans = false;
  Bf16Form form = Bf16Form::kRounded;
  bool operator==(const Bf16OperandKey&) const = default;
};

class Bf16OperandCache {
 public:
  // Forgets every form (their memory is kept for the next ones: a step allocates nothing).
  void invalidate();

  // The form `key`, `bytes` long, made on the first request since invalidate() by
  // fill(void* out, int64_t chunk) for every chunk in [0, chunks): independent pieces (rows of a
  // rounded matrix, packed panels), each written by one call. The storage holds objects of the
  // type fill writes: the caller reads them as that type.
  //
  // Thread-safe, and the threads asking for a form not yet made share its making: each claims
  // the next chunk until none is left, then waits (spinning: a chunk takes microseconds) for the
  // others' chunks. The batch workers of a step reach each weight at the same moment, so one
  // waiting on a lock while the other rounded the whole weight serialised them (and put the waiter
  // to sleep); now both round half. A caller outside a parallel region shares the chunks with the
  // pool's threads. Every chunk is a function of the operand alone, so the form has the same bits
  // whoever makes which chunk.
  template <typename Fill>
  const void* get(const Bf16OperandKey& key, int64_t bytes, int64_t chunks, Fill&& fill) {
    Entry* e = nullptr;
    {
      const std::lock_guard lock(mutex_);
      e = &entry(key);
      if (e->state.load(std::memory_order_acquire) == kMade) return e->storage.data();
      if (e->state.load(std::memory_order_relaxed) == kUnmade) {
        e->storage.resize(static_cast<size_t>(bytes));
        e->chunks = chunks;
        e->next.store(0, std::memory_order_relaxed);
        e->done.store(0, std::memory_order_relaxed);
        e->state.store(kMaking, std::memory_order_relaxed);
        ++fills_;
      }
    }
    void* out = e->storage.data();
    make(*e, bytes, [&](int64_t chunk) { fill(out, chunk); });
    return out;
  }

  // How many forms were made since construction (tests: once per weight and kernel per step).
  int64_t fills() const { return fills_; }

 private:
  enum State : int { kUnmade, kMaking, kMade };
  struct Entry {
    Bf16OperandKey key;
    std::vector<std::byte> storage;
    std::atomic<int> state{kUnmade};
    int64_t chunks = 0;
    std::atomic<int64_t> next{0}, done{0};  // the next chunk to claim; chunks written
  };
  Entry& entry(const Bf16OperandKey& key);  // the key's entry (reusing an unmade one's memory)
  // Claims and fills chunks of e until none is left (with the pool's threads when called outside
  // a parallel region and the form is large), then waits for the chunks others claimed.
  void make(Entry& e, int64_t bytes, const std::function<void(int64_t)>& fill_chunk);
  // Held only to find or start an entry (a scan of a step's few weights): a spin lock, since the
  // workers ask at the same moments and a sleeping lock put one to sleep for longer than the scan.
  class SpinLock {
   public:
    void lock();
    void unlock() { held_.clear(std::memory_order_release); }

   private:
    std::atomic_flag held_ = ATOMIC_FLAG_INIT;
  };
  SpinLock mutex_;
  std::deque<Entry> entries_;  // a deque: entries hold atomics and never move
  int64_t fills_ = 0;
};

// While alive, the calling thread's bf16 GEMMs take their constant operands from `cache` (null: none).
class UseBf16OperandCache {
 public:
  explicit UseBf16OperandCache(Bf16OperandCache* cache);
  ~UseBf16OperandCache();
  UseBf16OperandCache(const UseBf16OperandCache&) = delete;
  UseBf16OperandCache& operator=(const UseBf16OperandCache&) = delete;

 private:
  Bf16OperandCache* previous_;
};

// The calling thread's cache in use, or null.
Bf16OperandCache* bf16_operand_cache();

}  // namespace tapegrad
