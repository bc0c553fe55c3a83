#include "tapegrad/lm/sampling.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "tapegrad/error.h"

namespace tapegrad::lm {

int32_t sample_token(std::span<const float> logits, const SamplingOptions& o, Rng& rng,
                     std::vector<std::pair<double, int32_t>>& p) {
  check(!logits.empty(), "sample: no logits");
  if (o.temperature == 0) return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  // Probabilities at this temperature, most likely first; ties by token id for determinism.
  p.clear();
  const double mx = *std::max_element(logits.begin(), logits.end());
  for (size_t i = 0; i < logits.size(); ++i)
    p.emplace_back(std::exp((logits[i] - mx) / o.temperature), static_cast<int32_t>(i));
  std::sort(p.begin(), p.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  size_t keep = p.size();
  if (o.top_k > 0) keep = std::min(keep, static_cast<size_t>(o.top_k));
  double total = 0;
  for (size_t i = 0; i < keep; ++i) total += p[i].first;
  if (o.top_p < 1) {
    double cum = 0;
    for (size_t i = 0; i < keep; ++i) {
      cum += p[i].first / total;
      if (cum >= o.top_p) {
        keep = i + 1;
        break;
      }
    }
    total = 0;
    for (size_t i = 0; i < keep; ++i) total += p[i].first;
  }
  double u = rng.uniform() * total;
  for (size_t i = 0; i < keep; ++i) {
    u -= p[i].first;
    if (u < 0) return p[i].second;
  }
  return p[keep - 1].second;
}

std::vector<int32_t> generate(nn::LanguageModel<float>& model, const text::Tokenizer& tokenizer, const std::string& prompt,
                              int64_t tokens, const SamplingOptions& options, Rng& rng,
                              const std::function<void(int32_t)>& on_token) {
  check(!prompt.empty(), "generate: the prompt is empty; give at least one character");
  check(tokens >= 0, "generate: tokens must be >= 0, got ", tokens);
  std::vector<int32_t> ids;
  try {
    ids = tokenizer.encode(prompt);
  } catch (const Error& e) {
    throw Error(cat("the prompt cannot be encoded: ", e.what()));
  }
  const size_t prompt_len = ids.size();
  const int64_t ctx = model.ctx(), V = model.vocab_size();
  nn::Decoder<float>* decoder = dynamic_cast<nn::Decoder<float>*>(&model);
  Tape<float> tape;
  std::vector<std::pair<double, int32_t>> scratch;
  std::optional<nn::KVCache<float>> cache;
  if (decoder && options.kv_cache && tokens > 0) cache.emplace(decoder->config().layers, ctx, decoder->config().dim);
  for (int64_t i = 0; i < tokens; ++i) {
    tape.clear();
    auto guard = tape.no_grad();
    nn::LmOutput<float> out;
    int64_t T = 0;  // rows of this pass; the next token's logits are its last row
    if (cache && static_cast<int64_t>(ids.size()) <= ctx) {  // the positions not cached yet: the prompt, then one
      const int64_t past = cache->length();
      T = static_cast<int64_t>(ids.size()) - past;
      out = decoder->forward(tape, std::span<const int32_t>(ids.data() + past, static_cast<size_t>(T)), 1, T, {}, nullptr,
                             &*cache);
    } else {
      T = std::min<int64_t>(ctx, static_cast<int64_t>(ids.size()));
      out = model.forward(tape, std::span<const int32_t>(ids.data() + ids.size() - T, static_cast<size_t>(T)), 1, T);
    }
    check(out.logits.defined() && out.logits.shape().numel() == T * V, model.type_name(), "::forward gave logits of shape ",
          out.logits.defined() ? out.logits.shape().str() : std::string("(none)"), " for 1 x ", T, " ids and ", V, " tokens");
    const std::span<const float> last(out.logits.data() + (T - 1) * V, static_cast<size_t>(V));
    ids.push_back(sample_token(last, options, rng, scratch));
    if (on_token) on_token(ids.back());
  }
  return {ids.begin() + static_cast<std::ptrdiff_t>(prompt_len), ids.end()};
}

}  // namespace tapegrad::lm
