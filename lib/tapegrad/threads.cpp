#include "tapegrad/threads.h"

#include <cblas.h>
#include <omp.h>

#include <atomic>

#include "tapegrad/blas_kernels.h"
#include "tapegrad/error.h"
#include "tapegrad/gemm.h"

namespace tapegrad {

namespace {
// 0: not configured yet. Atomic because the lab trains runs on several threads at once (each
// setting the same value).
std::atomic<int> g_threads{0};
}

void set_num_threads(int n) {
  // More threads than this is a mistake (a count where a size was meant): every parallel region
  // would try to start them.
  check(n <= kMaxThreads, "set_num_threads: n must be at most ", kMaxThreads, " (0: one per core), got ", n);
  configure_blas_kernels();  // before the first GEMM: OpenBLAS's kernels must not change under one
  gemm_kernels();            // TAPEGRAD_GEMM read here, so a bad value is an error before any GEMM runs
  if (n <= 0) n = omp_get_num_procs();
  g_threads = n;
  omp_set_num_threads(n);
  openblas_set_num_threads(gemm_threading() == GemmThreading::kOpenBlas ? n : 1);
}

int num_threads() {
  if (g_threads == 0) set_num_threads(0);
  return g_threads;
}

int num_cores() { return omp_get_num_procs(); }

}  // namespace tapegrad
