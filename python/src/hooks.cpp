// Module hooks from Python, as torch's:
//   h = model.named_modules()["blocks.1.norm2"]... or any C++ module m:
//   h = m.register_forward_hook(lambda module, input, output: ...)   # input a tuple of Vars
//   h = m.register_full_backward_pre_hook(lambda module, grad_output: ...)  # a tuple of arrays
//   h.remove()
// A C++ module's hooks also run when a C++ composite (the decoder, its blocks) calls it, and when
// the Trainer runs the model: the hook takes the GIL there (train_step releases it). The Vars a
// hook receives belong to the tape being recorded; from the Trainer, to a tape lent for the
// call only. grad_output is a numpy copy of d loss / d output. A hook that returns a value is an
// Error: the pass-through node cannot replace the gradient (torch's pre-hook may).
// _backward_pre_hook_node is the same node for tapegrad.nn.Module, the Python base class.
#include "bind.h"
#include "tapegrad/nn/module.h"

namespace tapegrad::py {

namespace {

using M = nn::Module<float>;
using U = nn::UnaryModule<float>;
using PV = PyVar<float>;

thread_local std::shared_ptr<PyTape<float>> recording;

// A Python object owned by C++ (a callable or a weak reference in a module's hook list),
// released under the GIL wherever the last owner drops it.
template <typename O>
std::shared_ptr<O> hold(O o) {
  return {new O(std::move(o)), [](O* p) {
            pyb::gil_scoped_acquire gil;
            delete p;
          }};
}

// The module as the hook's first argument: the object the hook was registered through when it is
// still alive (it keeps the module's owner alive, so a hook may keep it), else a reference for the
// call (the module runs, so it exists while the hook does).
pyb::object module_arg(const pyb::weakref& registered_on, U& module) {
  pyb::object self = registered_on();
  if (!self.is_none() && &self.cast<U&>() == &module) return self;
  return pyb::cast(&module, pyb::return_value_policy::reference);
}

void refuse_result(const pyb::object& result, const char* what) {
  check(result.is_none(), what, " returned ", type_name_of(result),
        "; a hook must return None (tapegrad cannot replace a module's output or gradient from a hook)");
}

pyb::tuple grad_tuple(TensorView<const float> g) { return pyb::make_tuple(numpy_copy<float>(g)); }

// What m.register_*_hook returns: remove() takes the hook off (again: nothing).
struct HookHandle {
  pyb::object module;  // keeps the module (and, for a child, its parent) alive
  int64_t id = 0;
  bool removed = false;
  void remove() {
    if (removed) return;
    module.cast<U&>().remove_hook(id);
    removed = true;
  }
};

}  // namespace

std::shared_ptr<PyTape<float>> py_tape_for(Tape<float>& tape, LentTapes<float>& lent) {
  return recording && &recording->get() == &tape ? recording : lent.lend(tape);
}

RecordingOn::RecordingOn(std::shared_ptr<PyTape<float>> tape) : previous_(std::exchange(recording, std::move(tape))) {}
RecordingOn::~RecordingOn() { recording = std::move(previous_); }

void bind_hooks(pyb::module_& m) {
  pyb::class_<HookHandle>(m, "HookHandle", "Returned by register_*_hook; remove() takes the hook off.")
      .def("remove", &HookHandle::remove)
      .def_readonly("id", &HookHandle::id)
      .def("__enter__", [](HookHandle& h) -> HookHandle& { return h; }, pyb::return_value_policy::reference)
      .def("__exit__", [](HookHandle& h, pyb::args) { h.remove(); });

  auto unary = pyb::reinterpret_borrow<pyb::class_<U, M, std::shared_ptr<U>>>(m.attr("UnaryModule"));
  unary.def(
      "register_forward_hook",
      [](pyb::object self, pyb::function hook) {
        const auto fn = hold(std::move(hook));
        // weak: a strong reference would be a cycle through C++ (module -> hook -> self -> owner -> module)
        const auto on = hold(pyb::weakref(self));
        const int64_t id = self.cast<U&>().register_forward_hook([fn, on](U& module, Var<float> x, Var<float> y) {
          pyb::gil_scoped_acquire gil;
          LentTapes<float> lent;
          const auto owner = py_tape_for(y.tape(), lent);
          const pyb::object module_obj = module_arg(*on, module);
          refuse_result((*fn)(module_obj, pyb::make_tuple(PV{owner, x}), PV{owner, y}), "a forward hook");
        });
        return HookHandle{self, id};
      },
      pyb::arg("hook"), "hook(module, input, output) after each call; input is a tuple of Vars.");
  unary.def(
      "register_full_backward_pre_hook",
      [](pyb::object self, pyb::function hook) {
        const auto fn = hold(std::move(hook));
        // weak: a strong reference would be a cycle through C++ (module -> hook -> self -> owner -> module)
        const auto on = hold(pyb::weakref(self));
        const int64_t id = self.cast<U&>().register_backward_hook([fn, on](U& module, TensorView<const float> g) {
          pyb::gil_scoped_acquire gil;
          const pyb::object module_obj = module_arg(*on, module);
          refuse_result((*fn)(module_obj, grad_tuple(g)), "a backward hook");
        });
        return HookHandle{self, id};
      },
      pyb::arg("hook"),
      "hook(module, grad_output) when the backward pass reaches the module's output, before its own\n"
      "backward; grad_output is a tuple with d loss / d output as a numpy array.");

  m.def(
      "_backward_pre_hook_node",
      [](const PV& y, pyb::function call) {
        const Var<float> in = y.get();
        const Var<float> out = nn::grad_tap(in, [fn = call.ptr()](TensorView<const float> dy) {
          pyb::gil_scoped_acquire gil;
          const pyb::handle hooks(fn);
          hooks(grad_tuple(dy));
        });
        y.owner->keep.push_back(call);  // the node, if recorded, calls it
        return PV{y.owner, out};
      },
      pyb::arg("output"), pyb::arg("call"), "The pass-through node of Module.register_full_backward_pre_hook.");
}

}  // namespace tapegrad::py
