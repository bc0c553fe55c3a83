// CustomOp: define a new op — its forward and the hand-derived gradient of each input — in a way
// that is hard to get wrong. The raw interface (Tape::make_output + Tape::record) is what the
// built-in ops use for speed; it leaves three traps that CustomOp closes:
//
//   raw record()                                  CustomOp
//   one closure gets din[i] for every input,      one rule per input, run only when that input
//   null when input i needs no gradient: a        needs a gradient: dx is never null
//   rule that forgets the check crashes as soon
//   as an input is tape.constant(...)
//
//   must add (+=) into din[i]; "=" drops the      dx is a zeroed buffer of input i's shape that
//   other uses of a value (and both halves of     the rule fills, with = or +=; CustomOp adds it
//   f(x, x))                                      in, so a value used twice gets both parts
//
//   a closure may point anywhere — a local of     what backward needs is captured by value or
//   the op function is gone when backward runs    copied into tape memory with save(); gradcheck
//                                                 re-runs every op after its function returned
//                                                 over a scribbled stack (and ASan reports it)
//
// Every input that needs a gradient must have a rule (finish() names the one missing), and the
// rules' signature and captures are checked at compile time (callable as (const T* dy, T* dx),
// trivially copyable: pointers and values only). Example — y = a * exp(b), element-wise:
//
//   template <typename T>
//   Var<T> scaled_exp(Var<T> a, Var<T> b) {
//     CustomOp<T> op("scaled_exp", {a, b}, a.shape());
//     op.require_same_shape(0, 1);
//     const int64_t n = op.output_shape().numel();
//     const T *av = op.input(0), *bv = op.input(1);
//     T* y = op.output();
//     for (int64_t i = 0; i < n; ++i) y[i] = av[i] * std::exp(bv[i]);
//     // d/da = exp(b) dy;  d/db = a exp(b) dy = y dy
//     op.grad(0, [=](const T* dy, T* da) { for (int64_t i = 0; i < n; ++i) da[i] = dy[i] * std::exp(bv[i]); });
//     op.grad(1, [=](const T* dy, T* db) { for (int64_t i = 0; i < n; ++i) db[i] = dy[i] * y[i]; });
//     return op.finish();
//   }
//
// Pointers from input(), output() and save() stay valid until the tape is cleared, so capturing
// them by value ([=]) is always right; never capture by reference ([&]).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <new>
#include <span>
#include <type_traits>

#include "tapegrad/tape.h"

namespace tapegrad {

template <typename T>
class CustomOp {
 public:
  // dx: a zeroed buffer of the input's shape, to receive dL/dx from dL/dy.
  using GradRule = InlineFunction<void(const T* dy, T* dx), Tape<T>::kClosureBytes>;

  // Creates the output (uninitialised: the forward writes it through output()). `name` must
  // outlive the tape (a string literal): it names the op in errors, profiles and tape.dump().
  CustomOp(const char* name, std::initializer_list<Var<T>> inputs, Shape output_shape)
      : name_(name), n_(static_cast<int>(inputs.size())) {
    check(n_ >= 1 && n_ <= Tape<T>::kMaxInputs, name, ": a custom op takes 1 to ", Tape<T>::kMaxInputs,
          " inputs, got ", n_);
    int i = 0;
    for (const Var<T>& v : inputs) {
      check(v.defined(), name, ": input ", i, " is an undefined Var");
      inputs_[i++] = v;
    }
    tape_ = &inputs_[0].tape();
    output_var_ = tape_->make_output(name, output_shape, std::span<const Var<T>>(inputs_.data(), n_));
    rules_ = ::new (tape_->template scratch<Rules>(1)) Rules{};
  }
  CustomOp(const CustomOp&) = delete;
  CustomOp& operator=(const CustomOp&) = delete;

  int num_inputs() const { return n_; }
  Var<T> input_var(int i) const { return inputs_[index(i)]; }
  const T* input(int i) const { return inputs_[index(i)].data(); }
  Shape input_shape(int i) const { return inputs_[index(i)].shape(); }
  T* output() const { return output_var_.data(); }
  Shape output_shape() const { return output_var_.shape(); }

  // "scaled_exp: input 0 has shape (3,4) but input 1 has (4,)".
  void require_same_shape(int i, int j) const {
    check(input_shape(i) == input_shape(j), name_, ": input ", i, " has shape ", input_shape(i), " but input ", j,
          " has ", input_shape(j), " (they must be equal)");
  }

  // Copies values a rule needs — a temporary of the forward pass — into tape memory that lives
  // until the tape is cleared; capture the returned pointer, never the temporary.
  const T* save(std::span<const T> values) {
    T* kept = tape_->template scratch<T>(static_cast<int64_t>(values.size()));
    std::copy(values.begin(), values.end(), kept);
    return kept;
  }
  // Uninitialised tape memory for n values (caches the forward fills for backward).
  T* scratch(int64_t n) { return tape_->template scratch<T>(n); }

  // The gradient rule of input i. It runs only when input i needs a gradient.
  template <typename F>
  CustomOp& grad(int i, F&& rule) {
    static_assert(std::is_invocable_r_v<void, F&, const T*, T*>,
                  "CustomOp::grad: a gradient rule is called as rule(const T* dy, T* dx)");
    static_assert(std::is_trivially_copyable_v<std::decay_t<F>>,
                  "CustomOp::grad: a rule may capture only pointers and values (it outlives this function; "
                  "copy tensors it needs with save())");
    check(!rules_->rule[index(i)], name_, ": gradient rule for input ", i, " given twice");
    rules_->rule[i] = GradRule(std::forward<F>(rule));
    return *this;
  }

  // Records the node (if any input needs a gradient) and returns the output.
  Var<T> finish() {
    check(!finished_, name_, ": finish() called twice");
    finished_ = true;
    if (!output_var_.requires_grad()) return output_var_;
    for (int i = 0; i < n_; ++i) {
      if (!inputs_[i].requires_grad()) continue;
      check(static_cast<bool>(rules_->rule[i]), name_, ": input ", i, " needs a gradient but has no rule: call grad(",
            i, ", [=](const T* dy, T* dx) { ... }) before finish()");
      rules_->numel[i] = inputs_[i].shape().numel();
    }
    tape_->record(name_, std::span<const Var<T>>(inputs_.data(), n_), output_var_,
                  [tape = tape_, rules = rules_, n = n_](const T* dy, T* const* din) {
                    for (int i = 0; i < n; ++i) {
                      if (din[i] == nullptr) continue;  // input i needs no gradient
                      const int64_t m = rules->numel[i];
                      T* dx = tape->template workspace<T>(m);  // every node's rules share it, warm
                      std::fill(dx, dx + m, T(0));
                      rules->rule[i](dy, dx);
                      for (int64_t k = 0; k < m; ++k) din[i][k] += dx[k];
                    }
                  });
    return output_var_;
  }

 private:
  // In tape memory: the node's closure points here, so it may outlive this builder.
  struct Rules {
    GradRule rule[Tape<T>::kMaxInputs];
    int64_t numel[Tape<T>::kMaxInputs] = {};
  };
  static_assert(std::is_trivially_destructible_v<Rules>, "the arena never runs destructors");

  int index(int i) const {
    check(i >= 0 && i < n_, name_, ": input index ", i, " out of range [0, ", n_, ")");
    return i;
  }

  const char* name_;
  int n_;
  std::array<Var<T>, Tape<T>::kMaxInputs> inputs_{};
  Tape<T>* tape_ = nullptr;
  Var<T> output_var_;
  Rules* rules_ = nullptr;
  bool finished_ = false;
};

}  // namespace tapegrad
