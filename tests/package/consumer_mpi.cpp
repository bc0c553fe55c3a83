// The optional MPI component from an installed tapegrad (find_package(tapegrad COMPONENTS mpi),
// tapegrad::mpi): started on its own, the MPI communicator is one process and never
// initialises MPI; its collectives leave the values as they are.
#include <cstdio>

#include "tapegrad/lm/mpi_communicator.h"

int main(int argc, char** argv) {
  tapegrad::lm::MpiCommunicator comm(&argc, &argv);
  double v[2] = {1.5, -2};
  comm.allreduce_sum(v, 2);
  comm.barrier();
  const bool ok = comm.rank() == 0 && comm.size() == 1 && !comm.distributed() && v[0] == 1.5 && v[1] == -2;
  std::printf("%s: mpi consumer: rank %d of %d\n", ok ? "ok" : "FAIL", comm.rank(), comm.size());
  return ok ? 0 : 1;
}
