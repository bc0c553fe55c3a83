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

#include <cstddef>
#include <cstdint>
#include <mutex>
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

  // The form `key`, `bytes` long, written by fill(void* out) on the first request since invalidate()
  // (the storage holds objects of the type fill writes: the caller reads them as that type).
  // Thread-safe: a second thread asking for the same form waits for the first.
  template <typename Fill>
  const void* get(const Bf16OperandKey& key, int64_t bytes, Fill&& fill) {
    const std::lock_guard lock(mutex_);
    Entry& e = entry(key);
    if (!e.valid) {
      e.storage.resize(static_cast<size_t>(bytes));
      fill(static_cast<void*>(e.storage.data()));
      e.valid = true;
    }
    return e.storage.data();
  }

  // How many forms were made since construction (tests: once per weight and kernel per step).
  int64_t fills() const { return fills_; }

 private:
  struct Entry {
    Bf16OperandKey key;
    std::vector<std::byte> storage;
    bool valid = false;
  };
  Entry& entry(const Bf16OperandKey& key);  // the key's entry (reusing an invalid one's memory)
  std::mutex mutex_;
  std::vector<Entry> entries_;
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
