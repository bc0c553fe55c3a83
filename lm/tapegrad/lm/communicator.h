// Communicator: the processes of a data-parallel run or a distributed sweep. This base class is
// a single process (rank 0 of 1, every collective a no-op), so callers need no #ifdefs; the MPI
// component (mpi_communicator.h, `find_package(tapegrad COMPONENTS mpi)`, tapegrad::mpi) derives
// the MPI_COMM_WORLD one. tapegrad::lm itself never needs MPI.
#pragma once

#include <cstdint>

namespace tapegrad::lm {

class Communicator {
 public:
  Communicator() = default;  // a single process
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_size() const { return local_size_; }  // ranks on this machine (to share its cores)
  bool distributed() const { return size_ > 1; }
  bool root() const { return rank_ == 0; }

  // In-place sums over all ranks.
  virtual void allreduce_sum(float* data, int64_t n) const;
  virtual void allreduce_sum(double* data, int64_t n) const;
  virtual void allreduce_min(double* data, int64_t n) const;  // in-place minima
  virtual void barrier() const;
  // Ends every rank (after an error on one of them, the others would wait forever).
  [[noreturn]] virtual void abort(int status) const;

 protected:
  int rank_ = 0, size_ = 1, local_size_ = 1;
};

}  // namespace tapegrad::lm
