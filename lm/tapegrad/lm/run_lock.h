// One writer per run folder. A writer (train_lm's --out, a compare_norms sweep) holds an advisory
// lock on DIR/.tapegrad.lock for its whole life; the file names the holder's pid. A second writer
// is refused with that pid; readers (eval_lm, sample_lm) still read, but never repair or clean a
// folder a live writer holds. The lock dies with its process, SIGKILL included: no stale locks.
// Taking the lock removes the temporary files of writers that were killed mid-write. Within one
// process the thread that holds a folder may take it again (nested: train_lm holds its folder and
// save_checkpoint takes it for each save); another thread is refused, as another process is.
// The library's writers take it themselves (lab::run_sweep, lm::save_checkpoint), so Python and
// the programs share the rule.
#pragma once

#include <string>

namespace tapegrad::lm {

class RunLock {
 public:
  // Takes `dir`'s lock, or throws an Error naming the holder. `create`: make the folder if it is
  // missing (a new run); otherwise a missing folder is an error (a resume).
  explicit RunLock(const std::string& dir, bool create = true);
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
