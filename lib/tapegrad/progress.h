// Progress: a live bar for any loop of steps — on a terminal one line redrawn at most ~10 times a
// second (step, loss, a rate if given, ETA), otherwise about 20 plain lines — so a training loop,
// an MLP's or the LM's, shows where it is without flooding a log.
//
//   Progress bar(0, steps);                       // interactive when stderr is a terminal
//   bar.update(step, loss);                       // or update(step, loss, tokens_per_s, "tok/s")
//   bar.message("step 500: val loss 1.234");      // a line that does not disturb the bar
//   bar.finish();
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace tapegrad {

class Progress {
 public:
  // Steps first_step + 1 ... total_steps; `enabled` false draws nothing (the non-root ranks of a
  // data-parallel run).
  Progress(int64_t first_step, int64_t total_steps, bool interactive = stderr_is_terminal(), bool enabled = true);
  // After each step (or more often: a plain line is printed once per step). `rate` (per second) is shown with its `unit` ("12.3k tok/s"), left out when
  // the unit is empty.
  void update(int64_t step, double loss, double rate = 0, const char* unit = "");
  void message(const std::string& line);
  void finish();

  static bool stderr_is_terminal();

 private:
  std::string eta(int64_t step) const;
  int64_t first_, total_;
  bool interactive_;
  bool enabled_;
  int64_t every_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool drawn_ = false;
  int64_t last_line_ = -1;  // the step of the last plain line
};

}  // namespace tapegrad
