#include "tapegrad/bf16_operand_cache.h"

namespace tapegrad {

namespace {
thread_local Bf16OperandCache* t_cache = nullptr;
}  // namespace

void Bf16OperandCache::invalidate() {
  const std::lock_guard lock(mutex_);
  for (Entry& e : entries_) e.valid = false;
}

Bf16OperandCache::Entry& Bf16OperandCache::entry(const Bf16OperandKey& key) {
  Entry* spare = nullptr;
  for (Entry& e : entries_) {
    if (e.key == key) {
      if (!e.valid) ++fills_;
      return e;
    }
    if (!e.valid && spare == nullptr) spare = &e;
  }
  // A new key: most steps ask for the same ones, so the weights' entries are found above; a model
  // whose weights moved reuses the memory of forms this step has not asked for.
  ++fills_;
  if (spare == nullptr) spare = &entries_.emplace_back();
  spare->key = key;
  return *spare;
}

UseBf16OperandCache::UseBf16OperandCache(Bf16OperandCache* cache) : previous_(t_cache) { t_cache = cache; }

UseBf16OperandCache::~UseBf16OperandCache() { t_cache = previous_; }

Bf16OperandCache* bf16_operand_cache() { return t_cache; }

}  // namespace tapegrad
