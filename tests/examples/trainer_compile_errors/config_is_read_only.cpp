// Must not compile: a setting changed under a running trainer would be silently ignored (the
// schedule, model and optimizer were built from it); set_schedule is the way to change the rate.
#include "tapegrad/lm/trainer.h"

void raise_lr(tapegrad::lm::Trainer& t) { t.config().lr = 0.1; }
