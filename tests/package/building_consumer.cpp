// Builds docs/building.md's consumer fragment (building_consumer.inc, extracted by run.sh) inside
// main and runs it in a fresh folder on 20 KB of the embedded corpus: it trains, checkpoints,
// resumes and samples.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "tapegrad/lm/checkpoint.h"
#include "tapegrad/lm/corpus.h"
#include "tapegrad/lm/sampling.h"

int main() {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("tapegrad-building-consumer-" + std::to_string(getpid()));
  fs::create_directories(dir);
  fs::current_path(dir);
  const std::string text = tapegrad::lm::default_corpus().substr(0, 20000);
  {
#include "building_consumer.inc"
    std::printf("building_consumer: resumed at step %lld, sampled %zu tokens\n", static_cast<long long>(r->step()),
                ids.size());
  }
  fs::current_path(dir.parent_path());
  fs::remove_all(dir);
}
