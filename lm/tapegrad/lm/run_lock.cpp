#include "tapegrad/lm/run_lock.h"

#include <algorithm>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <map>
#include <thread>

#include "tapegrad/error.h"
#include "tapegrad/io/file.h"

namespace tapegrad::lm {

namespace fs = std::filesystem;

namespace {

const char* const kLockFile = ".tapegrad.lock";

// Folders this process holds, with the thread that holds each and how often it took it: flock()
// conflicts between two descriptors of one process too, so held_by_another() must not count our
// own lock, and the holding thread may take it again (train_lm holds its folder and saves into it).
struct Holder {
  std::thread::id thread;
  int depth = 0;
};
std::mutex g_mutex;
std::map<std::string, Holder>& held_here() {
  static std::map<std::string, Holder> s;
  return s;
}

std::string key_of(const std::string& dir) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(dir, ec);
  return ec ? dir : p.string();
}

std::string lock_path(const std::string& dir) { return (fs::path(dir) / kLockFile).string(); }

}  // namespace

RunLock::RunLock(const std::string& dir, bool create) {
  if (!create) io::require_directory(dir, "checkpoint directory");
  io::ensure_writable_directory(dir);
  key_ = key_of(dir);
  {
    std::lock_guard lock(g_mutex);
    if (const auto it = held_here().find(key_); it != held_here().end()) {
      check(it->second.thread == std::this_thread::get_id(), "'", dir, "' is in use by another thread of this process "
            "(a sweep, a training run or a save): one writer per run folder; wait for it, or give another directory");
      ++it->second.depth;  // the holder again: the outer lock keeps the folder
      return;
    }
  }
  const std::string path = lock_path(dir);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  check(fd_ >= 0, "cannot lock '", dir, "': ", path, ": ", std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {};
    const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
    ::close(fd_);
    fd_ = -1;
    // The file holds the holder's pid; only its leading digits are shown (it is anyone's file).
    const std::string text = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
    const std::string digits = text.substr(0, std::min(text.find_first_not_of("0123456789"), size_t{20}));
    const std::string pid = digits.empty() ? std::string("unknown") : digits;
    throw Error(cat("'", dir, "' is in use by another tapegrad process (pid ", pid,
                    "): one writer per run folder; wait for it, or give another directory"));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
    // the pid is only informative
  }
  // The folder's one writer now: what killed writers left half-written is garbage.
  io::remove_stale_temp_files(dir);
  std::lock_guard lock(g_mutex);
  held_here()[key_] = {std::this_thread::get_id(), 1};
}

RunLock::~RunLock() {
  {
    std::lock_guard lock(g_mutex);
    const auto it = held_here().find(key_);
    if (it == held_here().end()) return;  // never taken
    if (--it->second.depth > 0) return;
    held_here().erase(it);
  }
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

bool RunLock::held_by_another(const std::string& dir) {
  {
    std::lock_guard lock(g_mutex);
    if (held_here().count(key_of(dir))) return false;
  }
  const int fd = ::open(lock_path(dir).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;  // never locked
  const bool free = ::flock(fd, LOCK_SH | LOCK_NB) == 0;
  ::close(fd);
  return !free;
}

}  // namespace tapegrad::lm
