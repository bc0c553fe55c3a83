#include "tapegrad/lm/data.h"

#include <algorithm>
#include <cmath>

#include "tapegrad/checked.h"
#include "tapegrad/error.h"

namespace tapegrad::lm {

TokenData split_tokens(const std::vector<int32_t>& tokens, double val_fraction, int64_t context) {
  check(val_fraction > 0 && val_fraction < 1, "data: validation fraction must be in (0, 1), got ", val_fraction);
  const auto n = static_cast<int64_t>(tokens.size());
  const auto cut = static_cast<int64_t>(std::floor((1.0 - val_fraction) * static_cast<double>(n)));
  TokenData d;
  d.train.assign(tokens.begin(), tokens.begin() + cut);
  d.val.assign(tokens.begin() + cut, tokens.end());
  const auto need = context + 1;
  check(static_cast<int64_t>(d.train.size()) >= need && static_cast<int64_t>(d.val.size()) >= need,
        "data: the text has ", n, " tokens; split ", static_cast<int>(100 * (1 - val_fraction) + 0.5), "/",
        static_cast<int>(100 * val_fraction + 0.5), " that is ", d.train.size(), " for training and ", d.val.size(),
        " for validation, but each part needs at least context + 1 = ", need,
        " tokens: use a longer text or a shorter --ctx");
  return d;
}

double unigram_loss(std::span<const int32_t> train, std::span<const int32_t> val, int64_t vocab) {
  check(vocab > 0 && !val.empty(), "unigram_loss: needs a vocabulary and validation tokens");
  std::vector<double> count(static_cast<size_t>(vocab), 1.0);  // add-one
  for (int32_t t : train) count[static_cast<size_t>(t)] += 1;
  const double total = static_cast<double>(train.size()) + static_cast<double>(vocab);
  double loss = 0;
  for (int32_t t : val) loss -= std::log(count[static_cast<size_t>(t)] / total);
  return loss / static_cast<double>(val.size());
}

BatchSampler::BatchSampler(std::span<const int32_t> tokens, int64_t B, int64_t T, uint64_t seed)
    : tokens_(tokens), B_(B), T_(T), rng_(seed) {
  check(B > 0 && T > 0, "data: batch and context must be positive, got B=", B, " T=", T);
  checked_mul(B, T, "data: batch x context");
  check(static_cast<int64_t>(tokens.size()) - 1 >= T, "data: ", tokens.size(), " tokens cannot hold a window of ",
        T + 1);
}

void BatchSampler::next(std::vector<int32_t>& ids, std::vector<int32_t>& targets) {
  ids.resize(static_cast<size_t>(B_ * T_));
  targets.resize(static_cast<size_t>(B_ * T_));
  const auto starts = static_cast<uint64_t>(static_cast<int64_t>(tokens_.size()) - T_);
  for (int64_t b = 0; b < B_; ++b) {
    const auto off = static_cast<int64_t>(rng_.below(starts));
    std::copy_n(tokens_.begin() + off, T_, ids.begin() + b * T_);
    std::copy_n(tokens_.begin() + off + 1, T_, targets.begin() + b * T_);
  }
}

}  // namespace tapegrad::lm
