// All nn modules, and nn::manual_seed (init.h). Each has its own file pair: the derivation of its backward, the kernels, the
// one-node functional op, and the Module class holding its parameters.
#pragma once

#include "tapegrad/nn/activation.h"
#include "tapegrad/nn/attention.h"
#include "tapegrad/nn/block.h"
#include "tapegrad/nn/decoder.h"
#include "tapegrad/nn/decoder_config.h"
#include "tapegrad/nn/dropout.h"
#include "tapegrad/nn/dyt.h"
#include "tapegrad/nn/embedding.h"
#include "tapegrad/nn/init.h"
#include "tapegrad/nn/layernorm.h"
#include "tapegrad/nn/linear.h"
#include "tapegrad/nn/mlp.h"
#include "tapegrad/nn/mlp_kind.h"
#include "tapegrad/nn/module.h"
#include "tapegrad/nn/norm.h"
#include "tapegrad/nn/placement.h"
#include "tapegrad/nn/rmsnorm.h"
#include "tapegrad/nn/scalenorm.h"
#include "tapegrad/nn/sequential.h"
