// Module: the base of every nn building block. It owns its parameters and its child modules
// (addresses stay stable: optimizers and tapes hold pointers to parameters), names them with
// stable dotted paths ("blocks.0.attn.qkv.weight", as torch's named_parameters), and prints a
// readable summary.
//
// A module's computation lives in a functional op — one tape node with a fused forward and a
// hand-derived backward (e.g. layer_norm in layernorm.h) — and the module only holds the
// parameters and options, as libtorch's modules sit on torch::nn::functional.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tapegrad/nn/hook_calls.h"
#include "tapegrad/parameter.h"
#include "tapegrad/random.h"
#include "tapegrad/state_dict.h"
#include "tapegrad/tape.h"

namespace tapegrad::nn {

template <typename T = float>
class Module {
 public:
  Module() = default;
  Module(const Module&) = delete;  // parameters are referenced by address: a copy would share or lose them
  Module& operator=(const Module&) = delete;
  // Moving keeps every parameter and child where it is (each lives on the heap): pointers to them —
  // an optimizer's, a derived module's members — stay valid, so a module can be returned from a
  // function or kept in a std::vector. A moved-to module drops the parameters it held before.
  Module(Module&&) noexcept = default;
  Module& operator=(Module&&) noexcept = default;
  virtual ~Module() = default;

  // Type name and options for summaries: "Linear", "in=128, out=384, bias=true".
  virtual std::string type_name() const = 0;
  virtual std::string options_repr() const { return ""; }

  // Every parameter, depth-first in registration order (a deterministic order: optimizers and
  // checkpoints rely on it), with its dotted name.
  std::vector<Parameter<T>*> parameters();
  std::vector<std::pair<std::string, Parameter<T>*>> named_parameters();
  // The parameter with this dotted name, relative to this module ("attn.qkv.weight" on a block);
  // throws with the list of names if there is none.
  Parameter<T>& parameter(const std::string& dotted_name);
  int64_t num_parameters();
  // This module ("") and every descendant, depth-first in registration order, by dotted path
  // ("blocks.0.attn"), as torch's named_modules: how a hook reaches a module inside a model.
  std::vector<std::pair<std::string, Module<T>*>> named_modules();
  // Every parameter's value by dotted name (torch's state_dict). The tensors are the module's
  // own: io::save_state_dict(path, m.state_dict()) saves, io::load_state_dict(path,
  // m.state_dict()) loads in place (state_dict.h).
  StateDict<T> state_dict();
  // Loads by name; missing/unexpected keys per options.strict, wrong shapes always an error.
  LoadReport load_state_dict(const std::map<std::string, Tensor<T>>& source, const LoadOptions& options = {});
  void zero_grad();

  // Re-draws every parameter with the module's own initialisation (init.h): the base visits the
  // children in registration order; modules with parameters of their own override it.
  virtual void reset_parameters(Rng& rng);

  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // A nested, torch-like description:
  //   Decoder(vocab=65, ...)
  //     (wte): Embedding(65, 128)
  //     (blocks): ModuleList(
  //       (0): DecoderBlock(...)
  std::string summary() const;

 protected:
  // Registers a parameter under `name` (its dotted name is prefixed by the parents' names).
  Parameter<T>& add_parameter(const std::string& name, Tensor<T> value);
  // Registers a parameter owned elsewhere (by a module written in another language, which this
  // module keeps alive): listed, named and stepped like its own, after them.
  void adopt_parameter(const std::string& name, Parameter<T>& external);
  // Registers and takes ownership of a child module; returns it typed.
  // Every Parameter's `name` is its full dotted path from the root, kept current as modules are
  // attached (also when a child gains children after being attached, as a ModuleList does).
  template <typename M>
  M& add_module(const std::string& name, std::unique_ptr<M> module) {
    M& ref = *module;
    static_cast<Module<T>&>(*module).set_prefix(prefix_ + name + ".");
    children_.emplace_back(name, std::move(module));
    return ref;
  }

 private:
  void set_prefix(const std::string& prefix);
  void collect(std::vector<std::pair<std::string, Parameter<T>*>>& out);
  void collect_modules(const std::string& path, std::vector<std::pair<std::string, Module<T>*>>& out);
  void describe(std::string& out, int indent) const;

  std::vector<std::pair<std::string, std::unique_ptr<Parameter<T>>>> params_;
  std::vector<std::pair<std::string, Parameter<T>*>> adopted_;  // adopt_parameter()
  std::vector<std::pair<std::string, std::unique_ptr<Module<T>>>> children_;
  std::string prefix_;  // this module's path from the root, with a trailing dot ("blocks.0.")
  bool training_ = true;
};

// An ordered list of modules named "0", "1", ... (torch.nn.ModuleList).
template <typename T = float>
class ModuleList : public Module<T> {
 public:
  template <typename M>
  M& push_back(std::unique_ptr<M> module) {
    M& ref = this->add_module(std::to_string(items_.size()), std::move(module));
    items_.push_back(&ref);
    return ref;
  }
  size_t size() const { return items_.size(); }
  Module<T>& operator[](size_t i) const { return *items_[i]; }
  std::string type_name() const override { return "ModuleList"; }

 private:
  std::vector<Module<T>*> items_;
};

// A module that maps one tensor to one tensor (norms, MLPs, attention), so a block can hold
// "some norm" chosen at run time.
//
// y passed through a node whose backward hands on_grad(d loss / d y) a view, then passes the
// gradient on unchanged (d out / d y = I): how a backward hook reads a module's output gradient.
// Without a gradient to come (no_grad, or y needs none) it records nothing and returns y.
// on_grad is kept on the tape: capture pointers and values only.
template <typename T, typename F>
Var<T> grad_tap(Var<T> y, F on_grad) {
  Tape<T>& tape = y.tape();
  if (!tape.grad_enabled() || !y.requires_grad()) return y;
  Var<T> out = tape.make_output("backward_hook", y.shape(), {y});
  const int64_t n = y.shape().numel();
  std::copy(y.data(), y.data() + n, out.data());
  tape.record("backward_hook", {y}, out, [on_grad, shape = y.shape(), n](const T* dy, T* const* dx) {
    on_grad(TensorView<const T>(dy, shape));
    for (int64_t i = 0; i < n; ++i) dx[0][i] += dy[i];
  });
  return out;
}

// Hooks, as torch's: `m(x)` runs forward(x) and then the module's hooks (forward(x) alone runs
// none); the library's composite modules (Sequential, the decoder and its blocks) call their
// children so, so a hook on any of them sees every pass.
//   a forward hook gets the input and the output of each call (read them with .value());
//   a backward hook gets d loss / d output when the backward pass reaches the module's output,
//     before the module's own backward runs (a pass-through node on the tape carries it).
// Without hooks, m(x) is forward(x): no node, no allocation. A hook must not outlive the module,
// and the module must not move while a tape that recorded it with backward hooks is in use.
template <typename T = float>
class UnaryModule : public Module<T> {
 public:
  virtual Var<T> forward(Var<T> x) = 0;

  Var<T> operator()(Var<T> x) { return with_hooks(x, forward(x)); }

  using ForwardHook = std::function<void(UnaryModule& module, Var<T> input, Var<T> output)>;
  using BackwardHook = std::function<void(UnaryModule& module, TensorView<const T> grad_output)>;
  // Each returns an id for remove_hook.
  int64_t register_forward_hook(ForwardHook hook) { return add_hook(forward_hooks_, std::move(hook)); }
  int64_t register_backward_hook(BackwardHook hook) { return add_hook(backward_hooks_, std::move(hook)); }
  // Removes the hook with this id; an id that is not this module's hook is an Error.
  void remove_hook(int64_t id) {
    const auto erase = [id](auto& hooks) { return std::erase_if(hooks, [id](const auto& h) { return h.first == id; }); };
    check(erase(forward_hooks_) + erase(backward_hooks_) == 1, "remove_hook: ", this->type_name(), " has no hook ", id);
  }

  // The hooks' part of m(x), for a composite module that calls a child's richer forward (the
  // block calls the attention's with its probe): runs the forward hooks on (x, y) and returns y,
  // or, with backward hooks, y passed through the node that calls them. Under a HookCalls
  // collector (a worker of a batch split across threads, hook_calls.h) the calls are collected
  // for one whole-batch call after the workers finish; under HooksOff nothing runs.
  Var<T> with_hooks(Var<T> x, Var<T> y) {
    if ((forward_hooks_.empty() && backward_hooks_.empty()) || HooksOff::active()) return y;
    if (!forward_hooks_.empty()) {
      if (HookCalls<T>* c = HookCalls<T>::active())
        c->calls.push_back({this, false, Tensor<T>::copy_of(x.value()), Tensor<T>::copy_of(y.value())});
      else
        call_forward_hooks(x, y);
    }
    if (backward_hooks_.empty()) return y;
    return grad_tap(y, [this](TensorView<const T> dy) {
      if (HookCalls<T>* c = HookCalls<T>::active()) c->calls.push_back({this, true, {}, Tensor<T>::copy_of(dy)});
      else call_backward_hooks(dy);
    });
  }

  // Runs the hooks now, from a copy of the list (so a hook may add or remove hooks).
  void call_forward_hooks(Var<T> x, Var<T> y) {
    for (const auto& [id, hook] : std::vector(forward_hooks_)) hook(*this, x, y);
  }
  void call_backward_hooks(TensorView<const T> dy) {
    for (const auto& [id, hook] : std::vector(backward_hooks_)) hook(*this, dy);
  }

 private:
  template <typename Hook>
  int64_t add_hook(std::vector<std::pair<int64_t, Hook>>& hooks, Hook hook) {
    check(static_cast<bool>(hook), "register_hook: the hook is empty");
    hooks.emplace_back(++last_hook_id_, std::move(hook));
    return last_hook_id_;
  }
  std::vector<std::pair<int64_t, ForwardHook>> forward_hooks_;
  std::vector<std::pair<int64_t, BackwardHook>> backward_hooks_;
  int64_t last_hook_id_ = 0;
};

}  // namespace tapegrad::nn
