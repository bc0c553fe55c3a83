// A Python context manager over a C++ scope guard: a guard whose destructor restores what its
// constructor replaced (Autocast: a thread's precision; Tape::NoGradGuard: a tape's recording).
//
// Such guards restore correctly only innermost first, the order `with` leaves them in. Called by
// hand (a notebook cell's __enter__, another's __exit__), enter/exit may come in any order, and
// exiting an outer block first would restore a state an inner block had replaced; the inner one's
// exit then puts back the outer one's state, and the scope stays in it for good without a word
// (a tape that records nothing, a thread left in bf16). So every open block takes a place in its
// scope's stack of open blocks (a thread's for autocast, a tape's for no_grad) and exiting any but
// the innermost is an error that changes nothing.
//
// A block dropped while open (never exited) is exited when it is its scope's innermost and the
// scope still exists; otherwise its guard is released, not run: running it would undo a block
// opened after it, or write into a tape that no longer exists. The scope then keeps the state the
// caller left it in.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tapegrad/error.h"

namespace tapegrad::py {

template <typename Guard>
class ScopedBlock {
 public:
  ScopedBlock() = default;
  ScopedBlock(const ScopedBlock&) = delete;
  ScopedBlock& operator=(const ScopedBlock&) = delete;
  ~ScopedBlock() { drop(false); }

  bool open() const { return guard_ != nullptr; }

  // Opens the block in the scope whose open blocks are `stack` (it must outlive the block while
  // the scope is alive), with the guard make() returns.
  template <typename Make>
  void enter(const char* what, std::vector<uint64_t>& stack, Make&& make) {
    check(!open(), what, ": already entered (use a new one for a nested block)");
    guard_ = make();
    stack_ = &stack;
    id_ = next_id();
    stack.push_back(id_);
  }

  // Closes it: an error, changing nothing, unless it is open and its scope's innermost.
  void exit(const char* what) {
    check(open(), what, ": exit without enter");
    check(!stack_->empty() && stack_->back() == id_, what,
          ": exited out of order: a block entered inside this one is still open; exit that one first");
    stack_->pop_back();
    guard_.reset();
  }

  // For the owner's destructor: `scope_alive` says whether the stack and the state the guard
  // restores still exist and may be touched from this thread (see above).
  void drop(bool scope_alive) {
    if (!open()) return;
    if (scope_alive && !stack_->empty() && stack_->back() == id_) {
      stack_->pop_back();
      guard_.reset();
      return;
    }
    if (scope_alive) std::erase(*stack_, id_);
    (void)guard_.release();  // the state it replaced is not restored: see above
  }

 private:
  static uint64_t next_id() {
    static uint64_t next = 1;  // callers hold the GIL
    return next++;
  }

  std::unique_ptr<Guard> guard_;
  std::vector<uint64_t>* stack_ = nullptr;
  uint64_t id_ = 0;
};

}  // namespace tapegrad::py
