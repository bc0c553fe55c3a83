// MpiCommunicator: the processes of MPI_COMM_WORLD, in the optional MPI component
// (`find_package(tapegrad COMPONENTS mpi)`, `target_link_libraries(app PRIVATE tapegrad::mpi)`).
//
// Construct exactly one, first thing in main(). When the process was started by an MPI launcher
// (mpirun, mpiexec or srun, which set OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK) it calls
// MPI_Init_thread (FUNNELED: only the main thread talks to MPI; OpenMP and sweep worker threads
// never do) and MPI_Finalize on destruction. A program started on its own never initialises MPI:
// it is then a single process, with no start-up cost and none of the allocations OpenMPI leaves
// behind at exit.
#pragma once

#include "tapegrad/lm/communicator.h"

namespace tapegrad::lm {

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator(int* argc, char*** argv);
  ~MpiCommunicator() override;

  void allreduce_sum(float* data, int64_t n) const override;
  void allreduce_sum(double* data, int64_t n) const override;
  void allreduce_min(double* data, int64_t n) const override;
  void barrier() const override;
  [[noreturn]] void abort(int status) const override;

 private:
  bool owns_mpi_ = false;
};

}  // namespace tapegrad::lm
