// Sampling the next token from logits: temperature, then top-k, then top-p (nucleus), then a
// draw from the renormalised distribution with a seeded generator.
//   temperature 0   greedy (argmax)
//   top_k 0         no top-k cut
//   top_p 1         no nucleus cut: keep the smallest set of most likely tokens whose
//                   probabilities sum to at least top_p
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <span>
#include <vector>

#include "tapegrad/nn/decoder.h"
#include "tapegrad/random.h"
#include "tapegrad/text/tokenizer.h"

namespace tapegrad::lm {

struct SamplingOptions {
  double temperature = 1.0;
  int64_t top_k = 0;
  double top_p = 1.0;
  // Keep every layer's keys and values (nn/kv_cache.h) while the sequence fits the context, so
  // each token costs one row of the model instead of its whole window; past the context the
  // window slides (learned positions shift) and is recomputed either way. Same tokens, up to
  // float rounding in the logits.
  bool kv_cache = true;
};

// `scratch` avoids allocating per token.
int32_t sample_token(std::span<const float> logits, const SamplingOptions& o, Rng& rng,
                     std::vector<std::pair<double, int32_t>>& scratch);

// Continues `prompt` by `tokens` tokens, each sampled from the model's next-token distribution
// over the last `context` tokens. on_token (optional) sees each new id as it is drawn, e.g. to
// print it. Returns the generated ids (the prompt's excluded). Throws, naming the text, if the
// prompt is empty or holds a character the tokenizer does not know. A decoder caches its keys and
// values (options.kv_cache); another language model runs on the whole window for each token.
std::vector<int32_t> generate(nn::LanguageModel<float>& model, const text::Tokenizer& tokenizer, const std::string& prompt,
                              int64_t tokens, const SamplingOptions& options, Rng& rng,
                              const std::function<void(int32_t)>& on_token = {});

}  // namespace tapegrad::lm
