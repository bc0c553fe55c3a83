#include "tapegrad/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace tapegrad {

bool Progress::stderr_is_terminal() { return isatty(STDERR_FILENO) != 0; }

Progress::Progress(int64_t first_step, int64_t total_steps, bool interactive, bool enabled)
    : first_(first_step), total_(total_steps), interactive_(interactive), enabled_(enabled),
      every_(std::max<int64_t>(1, (total_steps - first_step) / 20)),
      start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

std::string Progress::eta(int64_t step) const {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double per_step = elapsed / static_cast<double>(std::max<int64_t>(1, step - first_));
  const auto s = static_cast<int64_t>(per_step * static_cast<double>(std::max<int64_t>(0, total_ - step)));
  char b[32];
  std::snprintf(b, sizeof b, "%lld:%02lld", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  return b;
}

void Progress::update(int64_t step, double loss, double rate, const char* unit) {
  if (!enabled_) return;
  char shown[64] = "";
  if (unit && *unit) {  // thousands as "k" from 1000 up: "12.3k tok/s", "850.0 samples/s"
    if (rate >= 1000) std::snprintf(shown, sizeof shown, " | %.1fk %s", rate / 1000, unit);
    else std::snprintf(shown, sizeof shown, " | %.1f %s", rate, unit);
  }
  const auto now = std::chrono::steady_clock::now();
  if (interactive_) {
    if (step != total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    constexpr int kWidth = 24;
    const int filled = static_cast<int>(std::clamp<int64_t>(kWidth * step / std::max<int64_t>(1, total_), 0, kWidth));
    std::fprintf(stderr, "\r\033[K step %lld/%lld [%s%s] loss %.4f%s | ETA %s", static_cast<long long>(step),
                 static_cast<long long>(total_), std::string(filled, '#').c_str(), std::string(kWidth - filled, '.').c_str(),
                 loss, shown, eta(step).c_str());
    drawn_ = true;
  } else if (step != last_line_ && (step % every_ == 0 || step == total_)) {
    last_line_ = step;  // a step updated many times (an epoch of batches) prints once
    std::fprintf(stderr, "step %lld/%lld loss %.4f%s | ETA %s\n", static_cast<long long>(step),
                 static_cast<long long>(total_), loss, shown, eta(step).c_str());
  }
}

void Progress::message(const std::string& line) {
  if (!enabled_) return;
  if (interactive_ && drawn_) std::fputs("\r\033[K", stderr);
  std::fprintf(stderr, "%s\n", line.c_str());
  last_draw_ = {};
}

void Progress::finish() {
  if (interactive_ && drawn_) std::fputs("\n", stderr);
  drawn_ = false;
}

}  // namespace tapegrad
