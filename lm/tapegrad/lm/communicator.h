// Communicator: the processes of a data-parallel run or a distributed sweep. With MPI (built with
// TAPEGRAD_HAVE_MPI and launched by mpirun/srun) it wraps MPI_COMM_WORLD; otherwise it is a
// single process (rank 0 of 1) and every collective is a no-op, so callers need no #ifdefs.
//
// Construct exactly one, first thing in main(). When the process was started by an MPI launcher
// (mpirun, mpiexec or srun, which set OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK) it calls
// MPI_Init_thread (FUNNELED: only the main thread talks to MPI; OpenMP and sweep worker threads
// never do) and MPI_Finalize on destruction. A program started on its own never initialises MPI:
// no start-up cost, and none of the allocations OpenMPI leaves behind at exit.
#pragma once

#include <cstdint>

namespace tapegrad::lm {

class Communicator {
 public:
  Communicator(int* argc, char*** argv);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_size() const { return local_size_; }  // ranks on this machine (to share its cores)
  bool distributed() const { return size_ > 1; }
  bool root() const { return rank_ == 0; }
  static bool built_with_mpi();

  // In-place sums over all ranks.
  void allreduce_sum(float* data, int64_t n) const;
  void allreduce_sum(double* data, int64_t n) const;
  void allreduce_min(double* data, int64_t n) const;  // in-place minima
  void barrier() const;
  // Ends every rank (after an error on one of them, the others would wait forever).
  [[noreturn]] void abort(int status) const;

 private:
  int rank_ = 0, size_ = 1, local_size_ = 1;
  bool owns_mpi_ = false;
};

}  // namespace tapegrad::lm
