// Thread control. Two pools could run our work: OpenMP's (our memory-bound kernels) and
// OpenBLAS's pthreads (GEMM). Both spin-wait between jobs, so running both on a small machine
// oversubscribes the cores and can halve the speed. tapegrad therefore uses one pool only:
// OpenMP runs everything, and GEMMs are split across the OpenMP threads, each calling a
// single-threaded OpenBLAS (see gemm.h; bench/bench_gemm measures the alternatives).
//
// These settings are process-wide by nature (OpenBLAS and OpenMP keep them globally).
#pragma once

namespace tapegrad {

// The most threads set_num_threads takes: far above any core count here, far below what would
// exhaust the process when every parallel region starts them.
inline constexpr int kMaxThreads = 1024;

// Sets the number of threads for all of tapegrad's work; n <= 0 means one per core; n above
// kMaxThreads is an Error naming it. Also pins OpenBLAS to one thread (it is called from inside
// our OpenMP threads).
void set_num_threads(int n);
// The number of threads set by set_num_threads (one per core before any call).
int num_threads();
// The number of cores OpenMP sees.
int num_cores();

}  // namespace tapegrad
