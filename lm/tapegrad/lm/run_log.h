// What a training run shows and records while it runs:
//   MetricsLog   DIR/metrics.jsonl, one JSON object per line, flushed as written
//   Progress     a live bar on a terminal (step, loss, tokens/s, ETA), plain lines otherwise
//   StopSignal   SIGINT/SIGTERM set a flag the loop checks between steps, so a run stops cleanly
#pragma once

#include <chrono>
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

class Progress {
 public:
  // `enabled` false draws nothing (the non-root ranks of a data-parallel run).
  Progress(int64_t first_step, int64_t total_steps, bool interactive, bool enabled = true);
  // Called after every step; draws at most ~10 times a second (or every `every` steps as lines).
  void update(int64_t step, double loss, double tokens_per_s);
  void message(const std::string& line);  // a line that does not disturb the bar
  void finish();

 private:
  std::string eta(int64_t step) const;
  int64_t first_, total_;
  bool interactive_;
  bool enabled_;
  int64_t every_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool drawn_ = false;
};

// Installs SIGINT/SIGTERM handlers that only record the signal.
void install_stop_handlers();
int stop_signal();  // 0, or the signal received

}  // namespace tapegrad::lm
