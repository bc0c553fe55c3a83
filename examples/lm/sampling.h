// Sampling the next token from logits: temperature, then top-k, then top-p (nucleus), then a
// draw from the renormalised distribution with a seeded generator.
//   temperature 0   greedy (argmax)
//   top_k 0         no top-k cut
//   top_p 1         no nucleus cut: keep the smallest set of most likely tokens whose
//                   probabilities sum to at least top_p
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tapegrad/random.h"

namespace tapegrad::lm {

struct SamplingOptions {
  double temperature = 1.0;
  int64_t top_k = 0;
  double top_p = 1.0;
};

// `scratch` avoids allocating per token.
int32_t sample_token(std::span<const float> logits, const SamplingOptions& o, Rng& rng,
                     std::vector<std::pair<double, int32_t>>& scratch);

}  // namespace tapegrad::lm
