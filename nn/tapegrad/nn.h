// All nn modules. Each has its own file pair: the derivation of its backward, the kernels, the
// one-node functional op, and the Module class holding its parameters.
#pragma once

#include "tapegrad/nn/attention.h"
#include "tapegrad/nn/block.h"
#include "tapegrad/nn/decoder.h"
#include "tapegrad/nn/decoder_config.h"
#include "tapegrad/nn/embedding.h"
#include "tapegrad/nn/layernorm.h"
#include "tapegrad/nn/linear.h"
#include "tapegrad/nn/mlp.h"
#include "tapegrad/nn/module.h"
#include "tapegrad/nn/norm.h"
#include "tapegrad/nn/rmsnorm.h"
