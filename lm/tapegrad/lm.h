// The training layer in one include: TrainConfig and the settings table, the tokenizers and
// token data, lm::Trainer, checkpoints with resume, sampling, and the embedded corpus — with
// everything below it ("tapegrad/tapegrad.h").
#pragma once

#include "tapegrad/lm/checkpoint.h"
#include "tapegrad/lm/corpus.h"
#include "tapegrad/lm/data.h"
#include "tapegrad/lm/sampling.h"
#include "tapegrad/lm/train_config.h"
#include "tapegrad/lm/trainer.h"
#include "tapegrad/tapegrad.h"
#include "tapegrad/text/tokenizer.h"
