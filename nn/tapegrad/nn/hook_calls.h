// Module hooks with torch's semantics when a batch runs in shares on several threads.
//
// A training step splits its batch across threads (lm/batch_parallel.h): each worker runs the
// whole model on its own sequences, so a hook called from inside would run once per worker, on
// the worker's thread, with a slice of the batch. A user expects what torch does: once per module
// call, with the whole batch's tensors, on the thread that called the step. So while a worker
// runs, a HookCalls on its thread collects each call its hooked modules make (the module, a copy
// of the input and output, or of d loss / d output) instead of running the hooks; after the
// workers finish, run_collected() takes call i of every worker — the same module call on each
// share, the shares contiguous sequence ranges in worker order — concatenates their tensors along
// the first (batch) axis and runs the module's hooks once on the whole, forward calls in their
// order, then backward ones in theirs. For a share's loss seeded with B_k / B, its d loss / d y is
// the whole batch's on its rows, so the concatenation is the whole batch's gradient.
//
// set_hooks_per_worker(true) restores one call per worker and share (to see each thread's slice):
// the hooks then run on the workers' threads at the same time, so they must be thread-safe.
// HooksOff turns a thread's hooks off (evaluation: its hundreds of forward calls are not the
// training step the hooks observe).
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <vector>

#include "tapegrad/tape.h"
#include "tapegrad/tensor.h"

namespace tapegrad::nn {

template <typename T>
class UnaryModule;

template <typename T>
struct HookCall {
  UnaryModule<T>* module = nullptr;
  bool backward = false;
  Tensor<T> input;   // forward calls
  Tensor<T> output;  // forward: the output; backward: d loss / d output
};

template <typename T>
class HookCalls {
 public:
  // Collects this thread's hook calls while alive (nested: the innermost collects).
  class Collect {
   public:
    explicit Collect(HookCalls& into) : previous_(std::exchange(active_, &into)) {}
    ~Collect() { active_ = previous_; }
    Collect(const Collect&) = delete;
    Collect& operator=(const Collect&) = delete;

   private:
    HookCalls* previous_;
  };

  // The collector of this thread, or null: hooks run directly.
  static HookCalls* active() { return active_; }

  std::vector<HookCall<T>> calls;

 private:
  static inline thread_local HookCalls* active_ = nullptr;
};

// Runs the calls the workers collected (`shares` in worker order) once each on the whole batch;
// `scratch` holds the whole-batch Vars a forward hook receives (cleared before each call). Every
// worker must have collected the same calls (the same modules in the same order): an Error names
// the first difference. Clears the collected calls.
template <typename T>
void run_collected(std::span<HookCalls<T>> shares, Tape<T>& scratch);

// One call per worker and share instead (false: the default, once per module call).
void set_hooks_per_worker(bool per_worker);
bool hooks_per_worker();

// No hooks run, and none are collected, on this thread while a HooksOff is alive.
class HooksOff {
 public:
  HooksOff() : previous_(std::exchange(off_, true)) {}
  ~HooksOff() { off_ = previous_; }
  HooksOff(const HooksOff&) = delete;
  HooksOff& operator=(const HooksOff&) = delete;
  static bool active() { return off_; }

 private:
  bool previous_;
  static inline thread_local bool off_ = false;
};

}  // namespace tapegrad::nn
