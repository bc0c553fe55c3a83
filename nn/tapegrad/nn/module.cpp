#include "tapegrad/tape.h"
