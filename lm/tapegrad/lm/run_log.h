// What a training run shows and records while it runs:
//   MetricsLog   DIR/metrics.jsonl, one JSON object per line, flushed as written
//   (the progress bar is tapegrad/progress.h, for any training loop)
//   StopSignal   SIGINT/SIGTERM set a flag the loop checks between steps, so a run stops cleanly
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace tapegrad::lm {

class MetricsLog {
 public:
  // Opens DIR/metrics.jsonl. With keep_until_step >= 0 (a resumed run), first rewrites it
  // atomically keeping only complete lines with step <= keep_until_step, so steps replayed after
  // the checkpoint are not logged twice; otherwise starts a new file.
  MetricsLog(const std::string& dir, int64_t keep_until_step);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  void write(const nlohmann::json& line);

 private:
  std::FILE* file_ = nullptr;
};

// Installs SIGINT/SIGTERM handlers that only record the signal.
void install_stop_handlers();
int stop_signal();  // 0, or the signal received

}  // namespace tapegrad::lm
