// Generation speed: lm::generate's tokens per second with the KV cache (nn/kv_cache.h: one row
// of the model per token) and without it (the whole window recomputed per token, as before), for
// the default model shape (L4 H4 C128, 65 characters) at context 64 and 256, one thread — what
// sample_lm does. Each iteration continues a one-character prompt to the full context, so every
// token of the cached run goes through the cache.
//
//   build/bench/bench_generate --benchmark_min_time=1
// PyTorch's full-recompute sampling of the same model: /usr/bin/python3 bench/torch_generate.py
#include <benchmark/benchmark.h>

#include <string>

#include "tapegrad/lm/sampling.h"
#include "tapegrad/text/char_tokenizer.h"
#include "tapegrad/threads.h"

namespace {
using namespace tapegrad;

void BM_generate(benchmark::State& st) {
  set_num_threads(1);
  const int64_t ctx = st.range(0);
  const bool cached = st.range(1) != 0;
  std::string alphabet;
  for (char ch = ' '; alphabet.size() < 65; ++ch) alphabet += ch;
  const auto tokenizer = text::CharTokenizer::train(alphabet);
  nn::DecoderConfig c;
  c.vocab_size = tokenizer.vocab_size(), c.ctx = ctx;  // L4 H4 C128: the defaults
  nn::Decoder<float> model(c, 1);
  const int64_t tokens = ctx - 1;
  for (auto _ : st) {
    Rng rng(1);
    benchmark::DoNotOptimize(lm::generate(model, tokenizer, alphabet.substr(0, 1), tokens, {.temperature = 1.0, .kv_cache = cached}, rng));
  }
  st.counters["tokens_per_s"] = benchmark::Counter(static_cast<double>(tokens * st.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_generate)->ArgsProduct({{64, 256}, {0, 1}})->ArgNames({"ctx", "kv_cache"})->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
