#include "tapegrad/random.h"

#include <cmath>
#include <numbers>

#include "tapegrad/error.h"

namespace tapegrad {

namespace {
uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

void Rng::set_state(const State& s) {
  check(s != State{}, "random generator state: all four words are zero (xoshiro's fixed point, which would repeat "
        "0 forever); a saved state is never zero, so it was damaged");
  s_ = s;
}

void Rng::reseed(uint64_t seed) {
  for (auto& w : s_) w = splitmix64(seed);
}

uint64_t Rng::next_u64() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

uint64_t Rng::below(uint64_t n) {
  __extension__ using u128 = unsigned __int128;  // GCC/Clang builtin: the high word of a 64x64 product
  return static_cast<uint64_t>((static_cast<u128>(next_u64()) * n) >> 64);
}

double Rng::normal() {
  // u1 in (0, 1] so the log is finite.
  const double u1 = 1.0 - uniform();
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace tapegrad
