#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "support.h"
#include "tapegrad/io/file.h"
#include "tapegrad/progress.h"

using namespace tapegrad;

namespace {
// What `draw` writes to stderr.
template <typename F>
std::string captured_stderr(F draw) {
  const std::string path = (std::filesystem::temp_directory_path() / "tapegrad_test_progress.txt").string();
  std::fflush(stderr);
  const int saved = dup(STDERR_FILENO);
  std::FILE* f = std::fopen(path.c_str(), "w");
  dup2(fileno(f), STDERR_FILENO);
  draw();
  std::fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::fclose(f);
  std::string text = io::read_file(path);
  std::filesystem::remove(path);
  return text;
}
}  // namespace

TEST_CASE("progress: plain lines for any loop, the rate only with its unit", "[progress]") {
  const std::string mlp = captured_stderr([] {
    Progress bar(0, 40, /*interactive=*/false);
    for (int step = 1; step <= 40; ++step) bar.update(step, 1.0 / step);
  });
  // Every 40 / 20 = 2 steps, no throughput claimed for a loop that has none.
  CHECK_THAT(mlp, Catch::StartsWith("step 2/40 loss 0.5000 | ETA "));
  CHECK(std::count(mlp.begin(), mlp.end(), '\n') == 20);
  CHECK(mlp.find("tok/s") == std::string::npos);
  const std::string lm = captured_stderr([] {
    Progress bar(0, 2, false);
    bar.update(1, 3.25, 12345, "tok/s");
    bar.update(2, 3.0, 850, "samples/s");
  });
  CHECK_THAT(lm, Catch::StartsWith("step 1/2 loss 3.2500 | 12.3k tok/s | ETA "));
  CHECK_THAT(lm, Catch::Contains("step 2/2 loss 3.0000 | 850.0 samples/s | ETA "));
  CHECK(captured_stderr([] { Progress(0, 5, false, /*enabled=*/false).update(5, 1); }).empty());
  // Updated after every batch with the epoch as its step: one line per printed epoch.
  const std::string epochs = captured_stderr([] {
    Progress bar(0, 3, false);
    for (int epoch = 1; epoch <= 3; ++epoch)
      for (int batch = 0; batch < 8; ++batch) bar.update(epoch, 1.0 / epoch);
  });
  CHECK(epochs.rfind("step 1/3 loss 1.0000", 0) == 0);
  CHECK(std::count(epochs.begin(), epochs.end(), '\n') == 3);
}
