// The float causal softmax's packet kernels, one copy per instruction set (tapegrad/isa.h); the
// checked entry points are causal_softmax.cpp's.
#include "tapegrad/isa_kernel.h"

#include <Eigen/Core>
#include <algorithm>
#include <limits>

#include "tapegrad/nn/causal_softmax.h"

namespace tapegrad::nn::TAPEGRAD_ISA_NS {

namespace {

namespace ei = Eigen::internal;
using Packet = ei::packet_traits<float>::type;
constexpr int64_t kLanes = sizeof(Packet) / sizeof(float);  // the packet's floats
// Rows per group of passes: their maxima and scales stay in a small stack array.
constexpr int64_t kGroup = 64;

// Where row i's visible prefix ends: the offset of its last (partial or whole) packet, and which of
// that packet's lanes are inside the prefix.
struct RowSpan {
  int64_t last;
  Packet keep;
};
RowSpan row_span(int64_t visible) {
  const int64_t last = (visible - 1) / kLanes * kLanes;
  return {last, ei::pcmp_lt(ei::plset<Packet>(0.f), ei::pset1<Packet>(static_cast<float>(visible - last)))};
}

// The packet at row + at; one that would run past the row's width is read through a local packet
// (its lanes past the row are zero and masked by the caller).
Packet load_last(const float* row, int64_t at, int64_t width) {
  if (at + kLanes <= width) return ei::ploadu<Packet>(row + at);
  float staged[kLanes] = {};
  std::copy(row + at, row + width, staged);
  return ei::ploadu<Packet>(staged);
}
void store_last(float* row, int64_t at, int64_t width, const Packet& p) {
  if (at + kLanes <= width) return ei::pstoreu(row + at, p);
  float staged[kLanes];
  ei::pstoreu(staged, p);
  std::copy(staged, staged + (width - at), row + at);
}

// e^x, and exactly 0 where e^x is below float's normal range (x < ln FLT_MIN = -87.34): Eigen's
// pexp clamps its argument there on some targets (AVX2) and gives ~1e-38 even for x = -inf, where
// a masked score must get probability 0. Terms this small cannot change a row's sum (>= 1).
Packet exp_or_zero(const Packet& x) {
  const Packet low = ei::pset1<Packet>(-87.33654f);
  return ei::pselect(ei::pcmp_lt(x, low), ei::pzero(x), ei::pexp(x));
}

// Zeroes row[from, width).
void zero_rest(float* row, int64_t from, int64_t width) {
  int64_t j = from;
  for (; j + kLanes <= width; j += kLanes) ei::pstoreu(row + j, ei::pzero(Packet{}));
  for (; j < width; ++j) row[j] = 0.f;
}

float forward(float* P, int64_t rows, int64_t width, int64_t first) {
  const Packet minus_inf = ei::pset1<Packet>(-std::numeric_limits<float>::infinity()), zero = ei::pzero(minus_inf);
  float largest = -std::numeric_limits<float>::infinity();
  float shift[kGroup], scale[kGroup];
  for (int64_t g0 = 0; g0 < rows; g0 += kGroup) {
    const int64_t n = std::min(kGroup, rows - g0);
    float* head = P + g0 * width;
    for (int64_t r = 0; r < n; ++r) {  // pass 1: row maxima
      const float* row = head + r * width;
      const RowSpan s = row_span(first + g0 + r);
      Packet m = ei::pselect(s.keep, load_last(row, s.last, width), minus_inf);
      for (int64_t j = 0; j < s.last; j += kLanes) m = ei::pmax(m, ei::ploadu<Packet>(row + j));
      shift[r] = ei::predux_max(m);
      largest = std::max(largest, shift[r]);
    }
    for (int64_t r = 0; r < n; ++r) {  // pass 2: exponentials and their sums
      float* row = head + r * width;
      const RowSpan s = row_span(first + g0 + r);
      const Packet m = ei::pset1<Packet>(shift[r]);
      Packet sum = zero;
      for (int64_t j = 0; j < s.last; j += kLanes) {
        const Packet e = exp_or_zero(ei::psub(ei::ploadu<Packet>(row + j), m));
        ei::pstoreu(row + j, e);
        sum = ei::padd(sum, e);
      }
      const Packet e = ei::pselect(s.keep, exp_or_zero(ei::psub(load_last(row, s.last, width), m)), zero);
      store_last(row, s.last, width, e);
      scale[r] = 1.f / ei::predux(ei::padd(sum, e));
    }
    for (int64_t r = 0; r < n; ++r) {  // pass 3: normalise; zero past the prefix
      float* row = head + r * width;
      const RowSpan s = row_span(first + g0 + r);
      const Packet k = ei::pset1<Packet>(scale[r]);
      for (int64_t j = 0; j < s.last; j += kLanes) ei::pstoreu(row + j, ei::pmul(ei::ploadu<Packet>(row + j), k));
      store_last(row, s.last, width, ei::pmul(load_last(row, s.last, width), k));
      zero_rest(row, std::min(s.last + kLanes, width), width);
    }
  }
  return largest;
}

void backward(float* dP, const float* P, int64_t rows, int64_t width, int64_t first) {
  const Packet zero = ei::pzero(Packet{});
  float dot[kGroup];
  for (int64_t g0 = 0; g0 < rows; g0 += kGroup) {
    const int64_t n = std::min(kGroup, rows - g0);
    for (int64_t r = 0; r < n; ++r) {  // pass 1: sum_k dP_ik P_ik over the prefix
      const float* g = dP + (g0 + r) * width;
      const float* p = P + (g0 + r) * width;
      const RowSpan s = row_span(first + g0 + r);
      Packet acc = ei::pselect(s.keep, ei::pmul(load_last(g, s.last, width), load_last(p, s.last, width)), zero);
      for (int64_t j = 0; j < s.last; j += kLanes)
        acc = ei::padd(acc, ei::pmul(ei::ploadu<Packet>(g + j), ei::ploadu<Packet>(p + j)));
      dot[r] = ei::predux(acc);
    }
    for (int64_t r = 0; r < n; ++r) {  // pass 2: dS = P (dP - dot); zero past the prefix
      float* g = dP + (g0 + r) * width;
      const float* p = P + (g0 + r) * width;
      const RowSpan s = row_span(first + g0 + r);
      const Packet d = ei::pset1<Packet>(dot[r]);
      for (int64_t j = 0; j < s.last; j += kLanes)
        ei::pstoreu(g + j, ei::pmul(ei::ploadu<Packet>(p + j), ei::psub(ei::ploadu<Packet>(g + j), d)));
      const Packet last = ei::pmul(load_last(p, s.last, width), ei::psub(load_last(g, s.last, width), d));
      store_last(g, s.last, width, ei::pselect(s.keep, last, zero));
      zero_rest(g, std::min(s.last + kLanes, width), width);
    }
  }
}

}  // namespace

extern const CausalSoftmaxKernels causal_softmax_kernels_table{&forward, &backward};

}  // namespace tapegrad::nn::TAPEGRAD_ISA_NS
