// Everything below the training layer in one include, as <torch/torch.h>: tensors, eager
// tensor math and row reductions (argmax, top-k), the tape and its ops, custom ops and
// gradcheck, the data loader and progress bar, optimizers, schedules and clipping, state
// dicts and safetensors files, and every nn module.
// The training layer (lm::Trainer, checkpoints, sampling) is "tapegrad/lm.h".
#pragma once

#include "tapegrad/custom_op.h"
#include "tapegrad/data_loader.h"
#include "tapegrad/gradcheck.h"
#include "tapegrad/io/safetensors.h"
#include "tapegrad/nn.h"
#include "tapegrad/ops.h"
#include "tapegrad/optim/adamw.h"
#include "tapegrad/optim/clip.h"
#include "tapegrad/optim/schedule.h"
#include "tapegrad/optim/sgd.h"
#include "tapegrad/progress.h"
#include "tapegrad/random.h"
#include "tapegrad/rows.h"
#include "tapegrad/state_dict.h"
#include "tapegrad/tape.h"
#include "tapegrad/tensor.h"
#include "tapegrad/tensor_math.h"
