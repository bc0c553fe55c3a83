// KVCache: the keys and values every attention layer has computed for the positions so far, for
// generation. With it, continuing a sequence by one token runs the model on that token's row
// alone: its q, k, v, attention over the cached keys/values, and every per-row module (norms,
// MLP, LM head) on one row — O(t) work at position t instead of the O(t^2) of re-running the
// whole prefix. The attention sees exactly the keys and values a full forward pass would compute
// for those positions (they depend only on earlier positions: causality), so the logits agree
// with the full pass up to float rounding (tests/nn/test_kv_cache.cpp).
//
// Batch 1, inference only (no tape gradients), at most `context` positions: the decoder's learned
// position table has no row past it, and sliding the window shifts every position, so a longer
// generation must recompute its window (lm::generate does).
//
// Layout per layer: K and V, each (capacity, C) row-major; row t is position t, its heads side by
// side (head h in columns h*HS .. h*HS+HS-1), as in the qkv buffer.
#pragma once

#include <cstdint>
#include <vector>

#include "tapegrad/error.h"

namespace tapegrad::nn {

template <typename T>
class KVCache {
 public:
  KVCache(int64_t layers, int64_t capacity, int64_t dim)
      : capacity_(capacity), dim_(dim), k_(static_cast<size_t>(layers)), v_(static_cast<size_t>(layers)) {
    check(layers > 0 && capacity > 0 && dim > 0, "KVCache: layers, capacity and dim must be positive, got ", layers,
          ", ", capacity, ", ", dim);
    for (auto* side : {&k_, &v_})
      for (auto& buffer : *side) buffer.assign(static_cast<size_t>(capacity * dim), T(0));
  }

  int64_t length() const { return length_; }      // positions cached
  int64_t capacity() const { return capacity_; }
  int64_t dim() const { return dim_; }
  int64_t layers() const { return static_cast<int64_t>(k_.size()); }
  void clear() { length_ = 0; }

  T* keys(int64_t layer) { return k_[static_cast<size_t>(layer)].data(); }
  T* values(int64_t layer) { return v_[static_cast<size_t>(layer)].data(); }
  // After every layer has appended `n` rows at positions length() .. length() + n - 1.
  void advance(int64_t n) {
    check(n >= 0 && length_ + n <= capacity_, "KVCache: ", length_, " + ", n, " positions exceed its capacity ", capacity_);
    length_ += n;
  }

 private:
  int64_t capacity_, dim_, length_ = 0;
  std::vector<std::vector<T>> k_, v_;
};

}  // namespace tapegrad::nn
