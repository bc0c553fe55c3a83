#include "tapegrad/nn/init.h"

#include <mutex>

namespace tapegrad::nn {

namespace {
std::mutex g_mutex;
Rng& generator() {
  static Rng rng(0);
  return rng;
}
}  // namespace

void manual_seed(uint64_t seed) {
  std::lock_guard lock(g_mutex);
  generator().reseed(seed);
}

Rng default_rng() {
  std::lock_guard lock(g_mutex);
  return Rng(generator().next_u64());
}

}  // namespace tapegrad::nn
