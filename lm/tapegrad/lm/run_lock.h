// One writer per run folder. A writer (train_lm's --out, a compare_norms sweep) holds an advisory
// lock on DIR/.tapegrad.lock for its whole life; the file names the holder's pid. A second writer
// is refused with that pid; readers (eval_lm, sample_lm) still read, but never repair or clean a
// folder a live writer holds. The lock dies with its process, SIGKILL included: no stale locks.
#pragma once

#include <string>

namespace tapegrad::lm {

class RunLock {
 public:
  // Creates `dir` if needed and takes its lock, or throws an Error naming the holder.
  explicit RunLock(const std::string& dir);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

  // Whether a process other than this one holds `dir`'s lock now.
  static bool held_by_another(const std::string& dir);

 private:
  std::string key_;
  int fd_ = -1;
};

}  // namespace tapegrad::lm
