#include "tapegrad/lm/mpi_communicator.h"

#include <mpi.h>

#include <cstdlib>

#include "tapegrad/error.h"

namespace tapegrad::lm {

namespace {
void mpi_check(int rc, const char* what) { check(rc == MPI_SUCCESS, "MPI: ", what, " failed (error ", rc, ")"); }
}  // namespace

namespace {
bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(var) != nullptr) return true;
  return false;
}
}  // namespace

MpiCommunicator::MpiCommunicator(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized && !launched_by_mpi()) return;  // a single process
  if (!initialized) {
    int provided = 0;
    mpi_check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    owns_mpi_ = true;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
  MPI_Comm_size(local, &local_size_);
  MPI_Comm_free(&local);
}

MpiCommunicator::~MpiCommunicator() {
  if (owns_mpi_) MPI_Finalize();
}

void MpiCommunicator::allreduce_sum(float* data, int64_t n) const {
  if (size_ > 1) mpi_check(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
}

void MpiCommunicator::allreduce_sum(double* data, int64_t n) const {
  if (size_ > 1) mpi_check(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
}

void MpiCommunicator::allreduce_min(double* data, int64_t n) const {
  if (size_ > 1) mpi_check(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
}

void MpiCommunicator::barrier() const {
  if (size_ > 1) MPI_Barrier(MPI_COMM_WORLD);
}

void MpiCommunicator::abort(int status) const {
  if (size_ > 1) MPI_Abort(MPI_COMM_WORLD, status);
  std::exit(status);
}

}  // namespace tapegrad::lm
