#include "tapegrad/lm/run_log.h"


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
