// Suffix broadcasting, the one rule tapegrad's binary element-wise ops follow: two shapes are
// compatible when they are equal or one is a suffix of the other — a bias (C) against (B, T, C),
// a mask (T, T) against (B, NH, T, T). The smaller operand repeats along the leading dims.
#pragma once

#include <cstdint>

#include "tapegrad/shape.h"

namespace tapegrad {

struct Broadcast {
  Shape out;           // the larger shape
  int64_t rows = 1;    // how many times the smaller operand repeats
  int64_t cols = 1;    // elements of the smaller operand
  bool a_is_small = false;
  bool b_is_small = false;
};

// Throws "<op>: shapes (2,3) and (4,) do not broadcast (...)" when incompatible.
Broadcast broadcast_suffix(const char* op, const Shape& a, const Shape& b);

}  // namespace tapegrad
