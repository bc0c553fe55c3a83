// Token data for language modelling: the corpus encoded once, split by position into a training
// part (the first 90 %) and a validation part (the last 10 %), as nanoGPT does; and seeded
// random (B, T) windows with their next-token targets.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tapegrad/random.h"

namespace tapegrad::lm {

struct TokenData {
  std::vector<int32_t> train, val;
  // The text the tokens came from, identified so that a resumed run can prove it trains on the
  // same data (checkpoints record both; empty when unknown).
  int64_t text_bytes = 0;
  std::string text_sha256;
};

// Splits at floor((1 - val_fraction) * n). Both parts must hold at least one window of
// context + 1 tokens; otherwise an Error says how many tokens each part has and needs.
TokenData split_tokens(const std::vector<int32_t>& tokens, double val_fraction, int64_t context);

// The validation loss of the best model that ignores context: the cross-entropy of `val` under
// the token frequencies of `train` (add-one smoothed, so unseen tokens cost a finite amount), in
// nats. A model that has not beaten it has learned nothing but the alphabet's frequencies.
double unigram_loss(std::span<const int32_t> train, std::span<const int32_t> val, int64_t vocab);

// Batches of B windows of T + 1 consecutive tokens at uniformly random offsets: ids are the
// first T tokens of each window, targets the last T (the next token at every position).
class BatchSampler {
 public:
  BatchSampler(std::span<const int32_t> tokens, int64_t B, int64_t T, uint64_t seed);
  // Fills ids and targets (B*T each, row-major (B, T)); no allocation after the first call.
  void next(std::vector<int32_t>& ids, std::vector<int32_t>& targets);
  Rng& rng() { return rng_; }  // its state is the data position saved in checkpoints

 private:
  std::span<const int32_t> tokens_;
  int64_t B_, T_;
  Rng rng_;
};

}  // namespace tapegrad::lm
