// parallel_for (and parallel_for_arrays, its form for many arrays at once): the one way
// tapegrad's kernels use threads outside GEMM.
//
// [0, n) is cut into one contiguous chunk per thread (a static schedule), so which thread handles
// which index depends only on n and the thread count — never on timing. Kernels that reduce keep
// each reduction inside one index (a row), so results are bitwise reproducible.
// Small ranges run inline: waking a thread costs a few microseconds.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "tapegrad/threads.h"

namespace tapegrad {

inline constexpr int64_t kMinParallelWork = 32768;

// Calls body(begin, end) on disjoint chunks covering [0, n). `work_per_index` estimates the cost
// of one index in elementary operations; below ~32k operations in total the loop runs inline.
template <typename Body>
void parallel_for(int64_t n, int64_t work_per_index, Body&& body) {
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

// Calls body(k, begin, end) for every array k in [0, arrays) on disjoint chunks covering
// [0, size(k)): one parallel region for many arrays, each thread taking its static share of every
// one (the chunks parallel_for would give). For element-wise passes over all the parameters (an
// optimizer step, a gradient sum, zeroing): one fork and join per pass instead of one per
// parameter, which at toy sizes cost more than the arithmetic (bench/RESULTS.md).
// A body taking (chunk, k, begin, end) also learns which of the num_threads() chunks of array k
// it has, for partial sums kept per chunk and added in chunk order (the same bits for the same
// thread count); chunk 0 is the whole array when the loop runs inline.
template <typename Size, typename Body>
void parallel_for_arrays(int64_t arrays, Size&& size, int64_t work_per_element, Body&& body) {
  const auto call = [&body](int64_t chunk, int64_t k, int64_t begin, int64_t end) {
    if constexpr (std::is_invocable_v<Body&, int64_t, int64_t, int64_t, int64_t>) body(chunk, k, begin, end);
    else body(k, begin, end);
  };
  int64_t total = 0;
  for (int64_t k = 0; k < arrays; ++k) total += size(k);
  const int threads = num_threads();
  if (threads == 1 || total * work_per_element < kMinParallelWork || omp_in_parallel()) {
    for (int64_t k = 0; k < arrays; ++k) call(0, k, int64_t{0}, size(k));
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    for (int64_t k = 0; k < arrays; ++k) {
      const int64_t n = size(k), begin = n * t / nt, end = n * (t + 1) / nt;
      if (end > begin) call(t, k, begin, end);
    }
  }
}

}  // namespace tapegrad
