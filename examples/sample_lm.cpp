// sample_lm: generate text from a train_lm checkpoint.
//   build/examples/sample_lm --checkpoint runs/demo --prompt "ROMEO:" --tokens 300 --temperature 0.8 --top-k 40
#include <CLI/CLI.hpp>
#include <cstdio>

#include "tapegrad/cli/cli.h"
#include "tapegrad/lm/checkpoint.h"
#include "tapegrad/text/utf8.h"
#include "tapegrad/lm/sampling.h"
#include "tapegrad/threads.h"

using namespace tapegrad;
using namespace tapegrad::lm;
using namespace tapegrad::cli;

int main(int argc, char** argv) {
  CLI::App app{"Generate text from a tapegrad checkpoint", "sample_lm"};
  std::string dir, prompt = "\n";
  int64_t tokens = 300;
  SamplingOptions o;
  uint64_t seed = 1;
  int threads = 1;
  app.add_option("--checkpoint", dir, "run directory written by train_lm")->required();
  app.add_option("--prompt", prompt, "text to continue (every character must be known to the tokenizer)");
  app.add_option("--tokens", tokens, "tokens to generate")->check(positive());
  app.add_option("--temperature", o.temperature, "0: greedy; < 1 sharper, > 1 flatter")->check(in_range(0.0, 100.0));
  app.add_option("--top-k", o.top_k, "sample among the k most likely tokens (0: all)")->check(non_negative());
  app.add_option("--top-p", o.top_p, "nucleus: the smallest set of tokens with probability >= p")
      ->check(in_range(0.0, 1.0));
  app.add_option("--seed", seed, "sampling seed")->check(unsigned_integer());
  app.add_flag("--kv-cache,!--no-kv-cache", o.kv_cache,
               "keep each layer's keys and values while the text fits the context (one row per token instead of "
               "the whole window; the same tokens)")->default_str("true");
  app.add_option("--threads", threads, "threads (0: one per core)")->check(non_negative());
  return run_cli(app, argc, argv, [&] {
    check(o.top_p > 0, "--top-p must be > 0");
    set_num_threads(threads);
    check(!prompt.empty(), "--prompt is empty; give at least one character");
    LoadedModel m = load_model(dir);
    Rng rng(seed);
    // A byte-level BPE token may end inside a character: print whole characters only.
    text::Utf8Stream out;
    const auto print = [](const std::string& s) { std::fwrite(s.data(), 1, s.size(), stdout); };
    bool started = false;  // the prompt is echoed once generate() has accepted it
    generate(*m.model, *m.tokenizer, prompt, tokens, o, rng, [&](int32_t id) {
      if (!started) print(out.push(prompt)), started = true;
      print(out.push(m.tokenizer->decode(std::span<const int32_t>(&id, 1))));
      std::fflush(stdout);
    });
    print(out.finish() + "\n");
    return 0;
  });
}
