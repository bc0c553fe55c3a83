// The Python front-end's shared pieces: how a tape and its values are held so that no Python call
// can leave a dangling pointer, and the entry points of each binding file.
//
// Lifetimes. A Var points into its tape's arena, and a tape points to the parameters it recorded
// (tape.param) and to the integer targets of a cross-entropy. In Python any of these may be
// dropped at any time, so:
//   - a PyTape owns its Tape and a list of the Python objects its nodes point into (the modules
//     and parameters it read, the targets it copied); clear() drops the list with the nodes;
//   - a PyVar holds its tape by shared_ptr, so the tape lives while any of its values does;
//   - values leave as numpy copies (the arena is reused after clear()); parameters' values and
//     gradients leave as numpy views that keep the parameter (and its module) alive.
// A Var of a cleared tape is a tapegrad.Error ("stale Var"), as in C++.
#pragma once

#include <atomic>
#include <thread>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tapegrad/error.h"
#include "tapegrad/nn/language_model.h"
#include "tapegrad/nn/module.h"
#include "tapegrad/tape.h"
#include "tapegrad/tensor.h"

// A module handed to Python by pointer (named_modules, a hook's module argument) arrives as its
// own class when that class is bound (LayerNorm, Linear, ...), and otherwise as UnaryModule when
// it is one (a decoder block, a norm of the zoo), so it can be called and hooked; else as Module.
namespace pybind11 {
template <typename Base>
  requires std::is_same_v<Base, tapegrad::nn::Module<float>> || std::is_same_v<Base, tapegrad::nn::UnaryModule<float>>
struct polymorphic_type_hook<Base> {
  static const void* get(const Base* src, const std::type_info*& type) {
    if (src == nullptr) return src;
    type = &typeid(*src);
    if (detail::get_type_info(*type) != nullptr) return dynamic_cast<const void*>(src);
    if (const auto* unary = dynamic_cast<const tapegrad::nn::UnaryModule<float>*>(src)) {
      type = &typeid(tapegrad::nn::UnaryModule<float>);
      return unary;
    }
    type = &typeid(tapegrad::nn::Module<float>);
    return static_cast<const tapegrad::nn::Module<float>*>(src);
  }
};
}  // namespace pybind11

namespace tapegrad::py {
// An array argument as numpy takes one: an ndarray, or a list, tuple, number or numpy scalar that
// np.asarray turns into one (tape.constant([1.0, 2.0]), cross_entropy(logits, [3, 1])). None, a str,
// bytes and other objects do not convert: a TypeError listing what the function takes, as for any
// argument of the wrong type; what the array holds is checked by its reader (tensor_from, tape_ids).
// A list or a Python number has no dtype of its own (typed false): a float tensor takes it at the
// tape's precision, as torch.tensor([0.1]) is float32; an ndarray or numpy scalar keeps its dtype
// and converts only where no value changes (tensor_from).
struct ArrayLike {
  pybind11::array array;
  bool typed = true;
};
}  // namespace tapegrad::py

namespace pybind11::detail {
template <>
struct type_caster<tapegrad::py::ArrayLike> {
  PYBIND11_TYPE_CASTER(tapegrad::py::ArrayLike, const_name("numpy.ndarray | list | float"));
  bool load(handle src, bool convert) {
    if (isinstance<array>(src)) {
      value.array = reinterpret_borrow<array>(src);
      return true;
    }
    if (!convert) return false;
    static const handle numpy_scalar = object(module_::import("numpy").attr("generic")).release();
    const bool number = (PyFloat_Check(src.ptr()) || PyLong_Check(src.ptr()) || isinstance(src, numpy_scalar)) &&
                        !PyUnicode_Check(src.ptr()) && !PyBytes_Check(src.ptr());
    if (!number && !PyList_Check(src.ptr()) && !PyTuple_Check(src.ptr())) return false;
    value.array = array::ensure(src);  // null, the error cleared, for a ragged list
    value.typed = isinstance(src, numpy_scalar);
    return static_cast<bool>(value.array);
  }
};
}  // namespace pybind11::detail

namespace tapegrad::py {

namespace pyb = pybind11;

template <typename T>
struct PyTape {
  std::unique_ptr<Tape<T>> owned;  // null for a tape lent by C++ (gradcheck's), see `lent`
  Tape<T>* lent = nullptr;         // set while the lender runs; null after: its Vars are then dead
  std::vector<pyb::object> keep;   // what the recorded nodes point into; dropped by clear()
  std::vector<uint64_t> no_grad_open;  // the open `with tape.no_grad()` blocks (scoped_block.h)

  PyTape() : owned(std::make_unique<Tape<T>>()) {}
  explicit PyTape(Tape<T>& borrowed) : lent(&borrowed) {}
  // Set while backward() runs without the GIL: another thread's op, value or clear() on this
  // tape then is refused, not raced.
  // (the thread running it may still read its values, from a backward hook).
  std::atomic<std::thread::id> backward_on{};

  Tape<T>& get() const {
    const std::thread::id on = backward_on.load();
    check(on == std::thread::id() || on == std::this_thread::get_id(),
          "this tape is running backward() in another thread: one thread uses a tape at a time");
    if (owned) return *owned;
    check(lent != nullptr,
          "this Var belongs to a tape that no longer exists (one lent to gradcheck's f or to a hook: use it inside the call only)");
    return *lent;
  }
  void clear() {
    get().clear();
    keep.clear();
  }
  // Runs the engine's backward with the GIL released and the tape marked busy.
  template <typename F>
  void backward_without_gil(F&& f) {
    Tape<T>& t = get();
    backward_on = std::this_thread::get_id();
    struct Done {
      std::atomic<std::thread::id>& on;
      ~Done() { on = std::thread::id(); }
    } done{backward_on};
    pybind11::gil_scoped_release release;
    f(t);
  }
};

template <typename T>
struct PyVar {
  std::shared_ptr<PyTape<T>> owner;
  Var<T> var;
  // The Var, after checking that its tape still exists (the C++ checks then catch a stale Var).
  Var<T> get() const {
    owner->get();
    return var;
  }
};

// Tapes lent to Python for the length of a callback (gradcheck's f, a hook called from C++): each
// lent PyTape is revoked when this scope ends, also by an exception, so a Var that escaped the
// callback is refused ("no longer exists") instead of pointing into a dead tape.
template <typename T>
class LentTapes {
 public:
  LentTapes() = default;
  LentTapes(const LentTapes&) = delete;
  LentTapes& operator=(const LentTapes&) = delete;
  ~LentTapes() {
    for (auto& t : lent_) t->lent = nullptr;
  }
  std::shared_ptr<PyTape<T>> lend(Tape<T>& tape) {
    lent_.push_back(std::make_shared<PyTape<T>>(tape));
    return lent_.back();
  }

 private:
  std::vector<std::shared_ptr<PyTape<T>>> lent_;
};

// While a module called from Python records on a PyTape, hooks hand out Vars of that tape
// (hooks.cpp); otherwise (a model run by the Trainer) a tape lent for the hook's call.
class RecordingOn {
 public:
  explicit RecordingOn(std::shared_ptr<PyTape<float>> tape);
  ~RecordingOn();
  RecordingOn(const RecordingOn&) = delete;
  RecordingOn& operator=(const RecordingOn&) = delete;

 private:
  std::shared_ptr<PyTape<float>> previous_;
};

// The PyTape a C++ callback hands Python for `tape`: the one a module called from Python records
// on (RecordingOn), else `tape` lent for the callback's length.
std::shared_ptr<PyTape<float>> py_tape_for(Tape<float>& tape, LentTapes<float>& lent);

// Tape-memory copy of integer ids (cross-entropy targets, embedding ids), valid until clear().
template <typename T>
std::span<const int32_t> tape_ids(PyTape<T>& t, const pyb::array& ids, const char* what);

// A Python keyword's setting key ("min_lr" -> "min-lr"), and a setting value from Python (numbers,
// text, booleans — numpy's scalars among them —, and lists of them: a list, tuple, range or numpy
// array); anything else is an Error naming `what`.
std::string setting_key(std::string name);
nlohmann::json setting_value_of(pyb::handle h, const std::string& what);

// A shape from a Python sequence of ints, checked (rank, non-negative, product in int64).
Shape shape_of(const std::vector<int64_t>& dims, const char* what);

// The name of h's Python type ("ndarray", "int64"), for messages.
std::string type_name_of(pyb::handle h);
// An integer argument as Python passes one: an int or any integer type (numpy's: anything with
// __index__), never a bool (numpy reads x[True] as a mask, not as 1); within 64 bits. Else a
// TypeError (not an integer) or an Error (too large), each naming `what` and the value.
int64_t int_arg(pyb::handle h, std::string_view what);
// Whether h is a sequence with a length (list, tuple, 1-d or larger numpy array), not a string:
// what ints_arg takes. A Var or a 0-d array indexes but has no len(); neither is one.
bool sized_sequence(pyb::handle h);
// A sized sequence of such integers, read by index (an item that fails to read raises its own error).
std::vector<int64_t> ints_arg(pyb::handle h, std::string_view what);
// One integer or a sized sequence of them (reshape(4) and reshape([4]), normalized_shape=4 or [4]).
std::vector<int64_t> int_or_ints_arg(pyb::handle h, std::string_view what);

// numpy copy of a view; a numpy view (no copy) of memory owned by `base`.
template <typename T>
pyb::array_t<T> numpy_copy(TensorView<const T> v);
template <typename T>
pyb::array_t<T> numpy_view(TensorView<T> v, pyb::handle base);
// A Tensor with the array's contents (C order, converted to T), checked for size; another dtype
// converts only where no value changes, unless `exact` is false (an untyped list or number).
template <typename T>
Tensor<T> tensor_from(const pyb::array& a, const char* what, bool exact = true);
template <typename T>
Tensor<T> tensor_from(const ArrayLike& a, const char* what) {
  return tensor_from<T>(a.array, what, a.typed);
}

void bind_tensor(pyb::module_& m);
void bind_autograd(pyb::module_& m);
void bind_nn(pyb::module_& m);
void bind_hooks(pyb::module_& nn_module);
void bind_function(pyb::module_& m);
void bind_plugin(pyb::module_& nn_module);

// A tapegrad.nn.Module with forward(tape, ids) -> logits (B, T, vocab), as a language model
// lm::Trainer trains (function.cpp); its parameters are adopted, not copied.
std::unique_ptr<nn::LanguageModel<float>> python_language_model(pyb::object model, int64_t vocab, int64_t ctx);
void bind_optim(pyb::module_& m);
void bind_lm(pyb::module_& m);
void bind_lab(pyb::module_& m);

}  // namespace tapegrad::py
