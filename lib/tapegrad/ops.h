// All primitive ops. Each lives in its own file pair under ops/: the derivation of its backward
// in a comment, raw-pointer kernels (reused by the fused nn modules), and the tape-level op.
#pragma once

#include "tapegrad/ops/add.h"
#include "tapegrad/ops/concat.h"
#include "tapegrad/ops/cross_entropy.h"
#include "tapegrad/ops/div.h"
#include "tapegrad/ops/dropout.h"
#include "tapegrad/ops/embedding.h"
#include "tapegrad/ops/gelu.h"
#include "tapegrad/ops/masked_fill.h"
#include "tapegrad/ops/matmul.h"
#include "tapegrad/ops/mse_loss.h"
#include "tapegrad/ops/mul.h"
#include "tapegrad/ops/pointwise.h"
#include "tapegrad/ops/reduce.h"
#include "tapegrad/ops/reshape.h"
#include "tapegrad/ops/scale.h"
#include "tapegrad/ops/silu.h"
#include "tapegrad/ops/slice.h"
#include "tapegrad/ops/softmax.h"
#include "tapegrad/ops/sub.h"
#include "tapegrad/ops/to_bf16.h"
