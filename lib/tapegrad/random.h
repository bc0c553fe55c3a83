// A small, seedable, serialisable random generator: xoshiro256** (Blackman & Vigna) seeded by
// splitmix64. We use our own rather than <random>'s distributions because those are
// implementation-defined: the same seed must give the same model on every standard library,
// and the whole state (four words) must fit in a checkpoint.
#pragma once

#include <array>
#include <cstdint>

namespace tapegrad {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { reseed(seed); }
  void reseed(uint64_t seed);

  uint64_t next_u64();
  // Uniform in [0, 1) with 53 random bits.
  double uniform();
  // Uniform integer in [0, n); n > 0. Lemire's multiply-shift (tiny bias below 2^-32 for our n).
  uint64_t below(uint64_t n);
  // Standard normal by Box-Muller; one draw per call (no cached second value, so the state is
  // exactly the four words below).
  double normal();

  using State = std::array<uint64_t, 4>;
  const State& state() const { return s_; }
  // All four words zero is xoshiro's one fixed point (it would return 0 forever: every batch the
  // same window); no seed reaches it, so such a state is damage and is refused with an Error.
  void set_state(const State& s);

 private:
  State s_{};
};

}  // namespace tapegrad
