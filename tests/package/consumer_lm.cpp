// Trains a small decoder on a string, checkpoints it, resumes it bitwise and samples from it —
// through the installed training layer alone (find_package(tapegrad), tapegrad::lm).
#include <cstdio>
#include <filesystem>
#include <string>

#include "tapegrad/lm/checkpoint.h"
#include "tapegrad/lm/sampling.h"
#include "tapegrad/lm/trainer.h"

int main() {
  using namespace tapegrad;
  using namespace tapegrad::lm;
  std::string text;
  for (int i = 0; i < 60; ++i) text += "the fox sees the heron by the river. ";
  TrainConfig c;
  c.model.layers = 1, c.model.heads = 2, c.model.dim = 32, c.model.ctx = 16, c.batch = 8, c.steps = 60, c.warmup = 5, c.lr = 1e-2;
  c.threads = 1;
  auto tokenizer = build_tokenizer(c, text, "the text");
  auto data = make_token_data(c, *tokenizer, text);

  Trainer straight(c, tokenizer, data);
  std::vector<double> losses;
  for (int i = 0; i < c.steps; ++i) losses.push_back(straight.train_step().loss);

  const std::string dir = (std::filesystem::temp_directory_path() / "tapegrad_consumer_lm").string();
  std::filesystem::remove_all(dir);
  Trainer first(c, tokenizer, data);
  for (int i = 0; i < 30; ++i) first.train_step();
  save_checkpoint(first, dir);
  auto resumed = resume_trainer(dir, {.text = text});
  for (int i = 30; i < c.steps; ++i)
    if (resumed->train_step().loss != losses[static_cast<size_t>(i)]) {
      std::printf("FAIL: step %d differs after resume\n", i + 1);
      return 1;
    }

  Rng rng(1);
  const auto ids = generate(resumed->model(), *tokenizer, "the fox", 24, {.temperature = 0}, rng);
  const std::string sample = "the fox" + tokenizer->decode(ids);
  std::filesystem::remove_all(dir);
  const bool learned = losses.back() < 0.5 * losses.front();
  std::printf("%s: lm consumer: loss %.3f -> %.3f, resumed bitwise, greedy sample \"%s\"\n", learned ? "ok" : "FAIL",
              losses.front(), losses.back(), sample.c_str());
  return learned ? 0 : 1;
}
