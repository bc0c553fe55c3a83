#include "tapegrad/vector_sums.h"

namespace tapegrad {

TAPEGRAD_ISA_DISPATCH(VectorSumFns, vector_sums)

}  // namespace tapegrad
