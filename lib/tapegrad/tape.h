// The tape: a Wengert list for reverse-mode automatic differentiation.
//
// Every op appends one Node — its name, the ids of its inputs, the id of its output and a backward
// closure — to a vector, in the order the forward pass ran. That order is already a topological
// order, so backward() seeds dL/dL = 1 and walks the vector from the end: no graph search, no
// recursion. A closure receives the gradient of its node's output and the gradient buffers of its
// inputs, and *adds* into them (+=), so a value used twice collects both contributions.
//
// Memory. Values computed by ops, their gradients and the caches closures point to all come from
// one Arena. clear() forgets them and keeps the memory, so a training loop that records the same
// step again and again stops touching the heap after the first steps (closures are stored inline,
// see InlineFunction). Leaves — parameters and inputs — live outside the tape.
//
// Lifetime rules, each enforced with a clear error:
//   * a Var is valid until the tape is cleared (a stale Var is detected by a generation count);
//   * backward() consumes the tape: a second backward() on it throws until clear();
//   * no-grad scopes (tape.no_grad()) record nothing; ops still compute values;
//   * while backward() runs, the tape records nothing either (an op a backward closure or hook
//     computes on it gets a value, no node: as PyTorch runs backward without grad mode), and
//     clear() throws: the pass is walking the nodes clear() would free.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <memory>
#include <vector>

#include "tapegrad/arena.h"
#include "tapegrad/error.h"
#include "tapegrad/inline_function.h"
#include "tapegrad/param_grads.h"
#include "tapegrad/parameter.h"
#include "tapegrad/tensor.h"

namespace tapegrad {

template <typename T = float>
class Tape;

// A handle to a value recorded on a tape: which tape, which slot, which generation.
template <typename T = float>
class Var {
 public:
  Var() = default;

  Tape<T>& tape() const { return *tape_; }
  int32_t id() const { return id_; }
  bool defined() const { return tape_ != nullptr; }

  // By value: a reference into the tape's slot vector would dangle as soon as the next op
  // appends a slot and the vector grows.
  Shape shape() const;
  T* data() const;
  TensorView<T> value() const { return {data(), shape()}; }
  bool requires_grad() const;
  // The gradient after backward(). Throws if none reached this value.
  TensorView<T> grad() const;

 private:
  friend class Tape<T>;
  Var(Tape<T>* tape, int32_t id, uint32_t generation) : tape_(tape), id_(id), generation_(generation) {}
  Tape<T>* tape_ = nullptr;
  int32_t id_ = -1;
  uint32_t generation_ = 0;
};

template <typename T>
class Tape {
 public:
  static constexpr int kMaxInputs = 8;
  static constexpr std::size_t kClosureBytes = 192;
  // dout: gradient of the node's output. din[i]: gradient buffer of input i, to accumulate into
  // with +=, or nullptr when input i needs no gradient (skip that work). A node recorded with
  // bit i of `assigns` set (record()) may instead be handed an unwritten buffer for input i —
  // din_fresh(i) — and must then write every element of it (=, not +=): the first gradient to
  // reach a value, as PyTorch's engine keeps it, with no zero-fill before it and no read of zeros.
  using Backward = InlineFunction<void(const T* dout, T* const* din), kClosureBytes>;

  Tape() = default;
  Tape(const Tape&) = delete;
  Tape& operator=(const Tape&) = delete;

  // ---- leaves: storage owned by the caller, which must outlive this tape's use of it ----
  // A value with no gradient (data, targets, masks).
  Var<T> constant(TensorView<const T> value);
  // A temporary tensor (constant(Tensor::from(...))) is copied into tape memory: its own storage
  // is gone before the tape reads it.
  Var<T> constant(Tensor<T>&& value);
  // A value whose gradient accumulates into `grad` (same shape).
  Var<T> leaf(TensorView<T> value, TensorView<T> grad);
  // A parameter: a leaf over p.value() / p.grad(), or a constant if !p.requires_grad.
  Var<T> param(Parameter<T>& p);
  // From now on param(p) accumulates into grads->grad_for(p) instead of p.grad() (nullptr: p.grad()
  // again) — how a data-parallel worker keeps its share apart (param_grads.h). Not owned.
  void set_param_grads(ParamGrads<T>* grads) { param_grads_ = grads; }

  // ---- for op implementers ----
  // A new value in the arena. It requires grad iff grad mode is on and any input does. `op`
  // names the caller in error messages (inputs from another tape, stale inputs).
  Var<T> make_output(const char* op, Shape shape, std::span<const Var<T>> inputs);
  Var<T> make_output(const char* op, Shape shape, std::initializer_list<Var<T>> inputs) {
    return make_output(op, shape, std::span<const Var<T>>(inputs.begin(), inputs.size()));
  }
  // A new value that shares `input`'s elements under another shape (for reshape/view). Its
  // gradient is separate; the op's backward adds it into the input's.
  Var<T> make_alias(const char* op, Var<T> input, Shape shape);
  // Arena memory for caches a backward closure points to; valid until clear().
  template <typename U>
  U* scratch(int64_t n) {
    return arena_.allocate<U>(n);
  }
  // Memory for a backward closure's own temporaries (an MLP's da and dh, say), valid only until
  // that closure returns. Every node's backward is served from the same memory, so what one
  // layer's backward just wrote is still in cache when the next layer's runs; buffers taken with
  // scratch() in forward would be cold by then, a new address per layer (bench/RESULTS.md: a
  // 2-thread step at C = 64 ran ~3 % faster). Call it from the closure, outside any parallel region;
  // anywhere else it throws. Uninitialised, like scratch().
  template <typename U>
  U* workspace(int64_t n) {
    check(in_backward_node_, "Tape::workspace: only a backward closure may ask for workspace (from forward, use scratch())");
    return workspace_.allocate<U>(n);
  }
  // Owns an object a backward closure points to until clear() (closures hold pointers and values
  // only: a node written in another language keeps its state here).
  void keep_alive(std::shared_ptr<const void> object) { kept_.push_back(std::move(object)); }
  // Appends the node producing `output`. Does nothing if `output` needs no gradient. `assigns`:
  // the inputs (bit i for input i) whose gradient the backward can write instead of add to, when
  // din_fresh(i) says so (see Backward).
  void record(const char* op, std::span<const Var<T>> inputs, Var<T> output, Backward backward, uint32_t assigns = 0);
  void record(const char* op, std::initializer_list<Var<T>> inputs, Var<T> output, Backward backward,
              uint32_t assigns = 0) {
    record(op, std::span<const Var<T>>(inputs.begin(), inputs.size()), output, backward, assigns);
  }
  // Inside a backward closure recorded with bit i of `assigns`: true when din[i] holds no
  // gradient yet (its elements are undefined) and the closure must write all of it. Always false
  // for inputs without the bit.
  bool din_fresh(int i) const {
    check(in_backward_node_ && i >= 0 && i < kMaxInputs, "Tape::din_fresh: only a backward closure may ask, for its inputs");
    return fresh_[static_cast<size_t>(i)];
  }

  // ---- backward ----
  // Seeds d loss / d loss = 1 (loss must have one element) and runs every node in reverse.
  void backward(Var<T> loss);
  // Same with an explicit upstream gradient of `output`'s shape (vector-Jacobian product). The
  // tape uses `upstream` in place as the output's gradient (no copy): keep it alive while you
  // read tape.grad(output).
  void backward(Var<T> output, TensorView<const T> upstream);
  // Gradient of a value after backward(); throws if no gradient reached it.
  TensorView<T> grad(Var<T> v) const;
  // Off: backward() takes the gradient of an op's output back once that op's own backward has
  // run (nothing reads it after that), and the next gradient of the same size reuses it, so a
  // training step works in a few warm buffers instead of a cold one per value. Intermediate
  // values' gradients are then gone after backward() (tape.grad() of one throws); leaves'
  // (parameters') stay. On by default; training loops turn it off (lm::BatchParallelStep does),
  // as PyTorch keeps only leaves' gradients unless asked.
  void retain_intermediate_grads(bool on) { retain_intermediate_grads_ = on; }

  // Forgets all values and nodes and invalidates their Vars; keeps the memory for reuse. Throws
  // while backward() runs (from a closure or hook): clear after it returns.
  void clear();

  // ---- modes ----
  class NoGradGuard {
   public:
    explicit NoGradGuard(Tape& tape) : tape_(tape), previous_(tape.grad_enabled_) { tape.grad_enabled_ = false; }
    ~NoGradGuard() { tape_.grad_enabled_ = previous_; }
    NoGradGuard(const NoGradGuard&) = delete;
    NoGradGuard& operator=(const NoGradGuard&) = delete;

   private:
    Tape& tape_;
    bool previous_;
  };
  // While the returned guard lives, ops compute values but record nothing.
  [[nodiscard]] NoGradGuard no_grad() { return NoGradGuard(*this); }
  bool grad_enabled() const { return grad_enabled_; }

  // ---- randomness inside ops (dropout masks) ----
  // The tape's generator: its draws continue across clear(), so every step gets new masks, and
  // a seeded tape repeats them bitwise.
  Rng& rng() { return rng_; }
  void manual_seed(uint64_t seed) { rng_.reseed(seed); }

  // ---- profiling: where a step's time goes, per op ----
  // While enabled, each op's forward (from make_output() to record()) and each node's backward
  // are timed and summed by op name. Off by default: then it costs one branch per op.
  struct OpTime {
    const char* op = nullptr;
    int64_t calls = 0;
    double forward_ms = 0, backward_ms = 0;
  };
  void set_profiling(bool on) { profiling_ = on; }
  const std::vector<OpTime>& profile() const { return profile_; }
  void reset_profile() { profile_.clear(); }

  // ---- introspection ----
  int64_t num_nodes() const { return static_cast<int64_t>(nodes_.size()); }
  int64_t num_values() const { return static_cast<int64_t>(slots_.size()); }
  const Arena& arena() const { return arena_; }
  // One line per node: "%4 = matmul(%2, %3) (12,64)". For debugging.
  std::string dump() const;

 private:
  friend class Var<T>;
  struct Slot {
    T* data = nullptr;
    T* grad = nullptr;
    Shape shape;
    bool requires_grad = false;
    bool tape_owns_grad = false;  // grad came from ensure_grad: not a leaf's, not the caller's upstream
    bool grad_released = false;  // taken back after its node ran (retain_intermediate_grads(false))
    bool* unwritten = nullptr;   // a parameter's lazily zeroed gradient (ParamGrads): its flag
  };
  struct Node {
    const char* op = nullptr;
    std::array<int32_t, kMaxInputs> inputs{};
    int32_t n_inputs = 0;
    int32_t output = -1;
    uint32_t assigns = 0;
    Backward backward;
  };

  const Slot& slot(Var<T> v, const char* who) const;
  OpTime& op_time(const char* op);
  Var<T> push_slot(Slot s);
  T* ensure_grad(int32_t id, bool fill_zeros = true);
  // A leaf's lazily zeroed gradient, filled: before anything adds to it or reads it.
  void fill_unwritten(const Slot& s) const;
  std::array<bool, kMaxInputs> fresh_{};  // din_fresh() of the running node

  std::vector<Slot> slots_;
  std::vector<Node> nodes_;
  std::vector<std::shared_ptr<const void>> kept_;  // keep_alive()
  Arena arena_;
  Arena workspace_;               // see workspace(): reset before every node's backward
  bool retain_intermediate_grads_ = true;
  static constexpr size_t kMaxFreeGrads = 64;
  std::vector<std::pair<int64_t, T*>> free_grads_;  // (numel, buffer) taken back, newest last
  bool in_backward_node_ = false;  // a node's backward closure is running
  bool in_backward_ = false;       // backward() is running
  uint32_t generation_ = 1;
  bool grad_enabled_ = true;
  Rng rng_{0x7a9e5eedULL};
  bool consumed_ = false;  // backward() ran since the last clear()
  bool profiling_ = false;
  ParamGrads<T>* param_grads_ = nullptr;
  int64_t op_start_ns_ = 0;  // when the op being recorded called make_output()
  std::vector<OpTime> profile_;
};

// The inputs of an op whose trailing inputs are optional (an undefined Var: no bias, no affine
// weight). Undefined ones are dropped, so put optional inputs last: the indices of the required
// inputs in the backward's din[] then never shift.
template <typename T>
class OpInputs {
 public:
  OpInputs(std::initializer_list<Var<T>> vars) {
    for (const Var<T>& v : vars)
      if (v.defined()) vars_[n_++] = v;
  }
  operator std::span<const Var<T>>() const { return {vars_.data(), static_cast<size_t>(n_)}; }

 private:
  std::array<Var<T>, Tape<T>::kMaxInputs> vars_{};
  int n_ = 0;
};

template <typename T>
Shape Var<T>::shape() const {
  check(tape_ != nullptr, "Var::shape: undefined Var (default-constructed)");
  return tape_->slot(*this, "Var::shape").shape;
}
template <typename T>
T* Var<T>::data() const {
  check(tape_ != nullptr, "Var::data: undefined Var (default-constructed)");
  return tape_->slot(*this, "Var::data").data;
}
template <typename T>
bool Var<T>::requires_grad() const {
  check(tape_ != nullptr, "Var::requires_grad: undefined Var (default-constructed)");
  return tape_->slot(*this, "Var::requires_grad").requires_grad;
}
template <typename T>
TensorView<T> Var<T>::grad() const {
  check(tape_ != nullptr, "Var::grad: undefined Var (default-constructed)");
  return tape_->grad(*this);
}

// For overloads that refuse a temporary where the tape keeps a view (ids, targets): such an
// overload's body is static_assert(kept_view_of_temporary<T>, "..."), which fails when it is chosen.
template <typename T>
inline constexpr bool kept_view_of_temporary = false;

}  // namespace tapegrad
