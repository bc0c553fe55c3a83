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

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tapegrad/error.h"
#include "tapegrad/tape.h"
#include "tapegrad/tensor.h"

namespace tapegrad::py {

namespace pyb = pybind11;

template <typename T>
struct PyTape {
  std::unique_ptr<Tape<T>> owned;  // null for a tape lent by C++ (gradcheck's), see `lent`
  Tape<T>* lent = nullptr;         // set while the lender runs; null after: its Vars are then dead
  std::vector<pyb::object> keep;   // what the recorded nodes point into; dropped by clear()

  PyTape() : owned(std::make_unique<Tape<T>>()) {}
  explicit PyTape(Tape<T>& borrowed) : lent(&borrowed) {}
  Tape<T>& get() const {
    if (owned) return *owned;
    check(lent != nullptr, "this Var belongs to a tape that no longer exists (gradcheck's: use it inside f only)");
    return *lent;
  }
  void clear() {
    get().clear();
    keep.clear();
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

// Tape-memory copy of integer ids (cross-entropy targets, embedding ids), valid until clear().
template <typename T>
std::span<const int32_t> tape_ids(PyTape<T>& t, const pyb::array& ids, const char* what);

// A Python keyword's setting key ("min_lr" -> "min-lr"), and a setting value from Python (numbers,
// text, booleans, lists of them); anything else is an Error naming `what`.
std::string setting_key(std::string name);
nlohmann::json setting_value_of(pyb::handle h, const std::string& what);

// A shape from a Python sequence of ints, checked (rank, non-negative, product in int64).
Shape shape_of(const std::vector<int64_t>& dims, const char* what);

// numpy copy of a view; a numpy view (no copy) of memory owned by `base`.
template <typename T>
pyb::array_t<T> numpy_copy(TensorView<const T> v);
template <typename T>
pyb::array_t<T> numpy_view(TensorView<T> v, pyb::handle base);
// A Tensor with the array's contents (C order, converted to T), checked for size.
template <typename T>
Tensor<T> tensor_from(const pyb::array& a, const char* what);

void bind_tensor(pyb::module_& m);
void bind_autograd(pyb::module_& m);
void bind_nn(pyb::module_& m);
void bind_optim(pyb::module_& m);
void bind_lm(pyb::module_& m);
void bind_lab(pyb::module_& m);

}  // namespace tapegrad::py
