#include "sampling.h"

#include <algorithm>
#include <cmath>

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

}  // namespace tapegrad::lm
