#include "tapegrad/lm/communicator.h"

#include <cstdlib>

namespace tapegrad::lm {

// One process: its sums and minima are its own values.
void Communicator::allreduce_sum(float*, int64_t) const {}
void Communicator::allreduce_sum(double*, int64_t) const {}
void Communicator::allreduce_min(double*, int64_t) const {}
void Communicator::barrier() const {}
void Communicator::abort(int status) const { std::exit(status); }

}  // namespace tapegrad::lm
