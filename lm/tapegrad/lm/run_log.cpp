#include "tapegrad/lm/run_log.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <sstream>

#include "tapegrad/error.h"
#include "tapegrad/io/file.h"
#include "tapegrad/io/json.h"

namespace tapegrad::lm {

namespace fs = std::filesystem;

MetricsLog::MetricsLog(const std::string& dir, int64_t keep_until_step) {
  const std::string path = (fs::path(dir) / "metrics.jsonl").string();
  if (keep_until_step >= 0 && fs::exists(path)) {
    std::istringstream in(io::read_file(path));
    std::string kept, line;
    while (std::getline(in, line)) {
      try {
        const auto j = io::parse_json(line, path);
        if (j.is_object() && j.value("step", int64_t{-1}) <= keep_until_step) kept += line + "\n";
      } catch (const std::exception&) {
        // a line cut short by a kill (or not ours): drop it
      }
    }
    io::write_file_atomic(path, kept);
  }
  file_ = io::open_for_append(path, /*truncate=*/keep_until_step < 0);
}

MetricsLog::~MetricsLog() {
  if (file_) std::fclose(file_);
}

void MetricsLog::write(const nlohmann::json& line) {
  const std::string s = line.dump() + "\n";
  check(std::fwrite(s.data(), 1, s.size(), file_) == s.size() && std::fflush(file_) == 0,
        "cannot write metrics.jsonl (disk full?)");
}

Progress::Progress(int64_t first_step, int64_t total_steps, bool interactive, bool enabled)
    : first_(first_step), total_(total_steps), interactive_(interactive), enabled_(enabled),
      every_(std::max<int64_t>(1, (total_steps - first_step) / 20)),
      start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

std::string Progress::eta(int64_t step) const {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double per_step = elapsed / static_cast<double>(std::max<int64_t>(1, step - first_));
  const auto s = static_cast<int64_t>(per_step * static_cast<double>(total_ - step));
  char b[32];
  std::snprintf(b, sizeof b, "%lld:%02lld", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  return b;
}

void Progress::update(int64_t step, double loss, double tokens_per_s) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (interactive_) {
    if (step != total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    constexpr int kWidth = 24;
    const int filled = static_cast<int>(kWidth * step / std::max<int64_t>(1, total_));
    std::fprintf(stderr, "\r\033[K step %lld/%lld [%s%s] loss %.4f | %.1fk tok/s | ETA %s",
                 static_cast<long long>(step), static_cast<long long>(total_), std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, '.').c_str(), loss, tokens_per_s / 1000, eta(step).c_str());
    drawn_ = true;
  } else if (step % every_ == 0 || step == total_) {
    std::fprintf(stderr, "step %lld/%lld loss %.4f | %.1fk tok/s | ETA %s\n", static_cast<long long>(step),
                 static_cast<long long>(total_), loss, tokens_per_s / 1000, eta(step).c_str());
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

namespace {
std::atomic<int> g_stop{0};
extern "C" void on_stop(int sig) { g_stop.store(sig); }
}  // namespace

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int stop_signal() { return g_stop.load(); }

}  // namespace tapegrad::lm
