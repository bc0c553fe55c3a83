#include "tapegrad/vector_ops.h"

namespace tapegrad {

TAPEGRAD_ISA_DISPATCH(VectorOpKernels, vector_ops)

}  // namespace tapegrad
