// parallel_for: the one way tapegrad's kernels use threads outside GEMM.
//
// [0, n) is cut into one contiguous chunk per thread (a static schedule), so which thread handles
// which index depends only on n and the thread count — never on timing. Kernels that reduce keep
// each reduction inside one index (a row), so results are bitwise reproducible.
// Small ranges run inline: waking a thread costs a few microseconds.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "tapegrad/threads.h"

namespace tapegrad {

// Calls body(begin, end) on disjoint chunks covering [0, n). `work_per_index` estimates the cost
// of one index in elementary operations; below ~32k operations in total the loop runs inline.
template <typename Body>
void parallel_for(int64_t n, int64_t work_per_index, Body&& body) {
  constexpr int64_t kMinParallelWork = 32768;
  const int threads = num_threads();
  if (threads == 1 || n < 2 || n * work_per_index < kMinParallelWork || omp_in_parallel()) {
    body(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t begin = n * t / nt, end = n * (t + 1) / nt;
    if (end > begin) body(begin, end);
  }
}

}  // namespace tapegrad
