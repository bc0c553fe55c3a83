// tapegrad.Tensor, tapegrad.Parameter and tapegrad.Error: float tensors that numpy reads without
// a copy (the buffer protocol), parameters whose value and grad are numpy views, and every C++
// error as a Python exception with the same message.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "bind.h"
#include "tapegrad/checked.h"
#include "tapegrad/error.h"
#include "tapegrad/lm/usage_error.h"
#include "tapegrad/parameter.h"
#include "tapegrad/random.h"

namespace tapegrad::py {

namespace {

// Sizes a Python caller asks for are bounded by this machine's memory: a larger tensor would be
// killed by the kernel (overcommit) while it is zero-filled, taking the interpreter with it.
int64_t memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : int64_t{1} << 40;
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::ostringstream s;
  s << "(";
  for (size_t i = 0; i < dims.size(); ++i) s << (i ? ", " : "") << dims[i];
  s << (dims.size() == 1 ? ",)" : ")");
  return s.str();
}

}  // namespace

Shape shape_of(const std::vector<int64_t>& dims, const char* what) {
  check(dims.size() <= static_cast<size_t>(Shape::kMaxRank), what, ": shape ", shape_text(dims), " has ", dims.size(),
        " dimensions; at most ", Shape::kMaxRank, " are supported");
  int64_t n = 1;
  for (int64_t d : dims) {
    check(d >= 0, what, ": shape ", shape_text(dims), " has a negative dimension");
    check(!__builtin_mul_overflow(n, d, &n), what, ": shape ", shape_text(dims), " has more elements than a 64-bit size holds");
  }
  const int64_t limit = memory_bytes() / 2;
  check(n <= limit / 8, what, ": shape ", shape_text(dims), " needs ", n, " elements, more than half of this machine's ",
        memory_bytes() >> 20, " MiB of memory");
  return Shape::from_range(dims.begin(), dims.end());
}

std::string type_name_of(pyb::handle h) { return std::string(pyb::str(pyb::type::handle_of(h).attr("__name__"))); }

int64_t int_arg(pyb::handle h, std::string_view what) {
  if (PyBool_Check(h.ptr()) || !PyIndex_Check(h.ptr()))
    throw pyb::type_error(cat(what, ": expected an integer, got ", type_name_of(h),
                              PyBool_Check(h.ptr()) ? " (a bool is not taken for 0 or 1)" : ""));
  const pyb::object i = pyb::reinterpret_steal<pyb::object>(PyNumber_Index(h.ptr()));
  if (!i) {  // __index__ refused (a float array): name the argument, keep the type's own reason
    pyb::error_already_set e;
    if (!e.matches(PyExc_TypeError)) throw;
    throw pyb::type_error(cat(what, ": expected an integer, got ", type_name_of(h), " (", e.value().attr("__str__")().cast<std::string>(), ")"));
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) throw pyb::error_already_set();
  check(overflow == 0, what, ": ", std::string(pyb::str(i)), " does not fit in 64 bits");
  return static_cast<int64_t>(v);
}

bool sized_sequence(pyb::handle h) {
  if (!PySequence_Check(h.ptr()) || PyUnicode_Check(h.ptr()) || PyBytes_Check(h.ptr())) return false;
  if (PySequence_Size(h.ptr()) >= 0) return true;
  PyErr_Clear();  // len() refused: a Var, a 0-d numpy array
  return false;
}

std::vector<int64_t> int_or_ints_arg(pyb::handle h, std::string_view what) {
  if (sized_sequence(h)) return ints_arg(h, what);
  if (PyBool_Check(h.ptr()) || !PyIndex_Check(h.ptr()))
    throw pyb::type_error(cat(what, ": expected an integer or a sequence of integers, got ", type_name_of(h)));
  return {int_arg(h, what)};
}

std::vector<int64_t> ints_arg(pyb::handle h, std::string_view what) {
  if (!sized_sequence(h)) throw pyb::type_error(cat(what, ": expected a sequence of integers, got ", type_name_of(h)));
  const Py_ssize_t n = PySequence_Size(h.ptr());
  if (n < 0) throw pyb::error_already_set();
  std::vector<int64_t> out;
  for (Py_ssize_t i = 0; i < n; ++i) {
    const pyb::object x = pyb::reinterpret_steal<pyb::object>(PySequence_GetItem(h.ptr(), i));
    if (!x) throw pyb::error_already_set();
    out.push_back(int_arg(x, what));
  }
  return out;
}

template <typename T>
pyb::array_t<T> numpy_copy(TensorView<const T> v) {
  std::vector<pyb::ssize_t> dims(v.shape().begin(), v.shape().end());
  pyb::array_t<T> out(dims);
  if (v.numel() > 0) std::memcpy(out.mutable_data(), v.data(), sizeof(T) * static_cast<size_t>(v.numel()));
  return out;
}

template <typename T>
pyb::array_t<T> numpy_view(TensorView<T> v, pyb::handle base) {
  std::vector<pyb::ssize_t> dims(v.shape().begin(), v.shape().end());
  return pyb::array_t<T>(dims, v.data(), base);
}

template <typename T>
Tensor<T> tensor_from(const pyb::array& a, const char* what, bool exact) {
  check(a.dtype().kind() == 'f' || a.dtype().kind() == 'i' || a.dtype().kind() == 'u' || a.dtype().kind() == 'b', what,
        ": expected an array of numbers, got dtype ", std::string(pyb::str(a.dtype())));
  const char* type = sizeof(T) == 4 ? "float32" : "float64";
  auto c = pyb::array_t<T, pyb::array::c_style | pyb::array::forcecast>::ensure(a);
  check(static_cast<bool>(c), what, ": cannot convert the array to ", type);
  std::vector<int64_t> dims(c.shape(), c.shape() + c.ndim());
  Tensor<T> t(shape_of(dims, what));
  if (t.numel() > 0) std::memcpy(t.data(), c.data(), sizeof(T) * static_cast<size_t>(t.numel()));
  // Another dtype converts only where no value changes (a list of 0.5s, np.arange, float32 into a
  // float64 tape): a float64 array of arbitrary values into a float32 tape is refused, not rounded
  // behind the caller's back, as torch refuses a Double tensor where Float is expected.
  if (exact && !a.dtype().is(pyb::dtype::of<T>())) {
    const auto wide = pyb::array_t<double, pyb::array::c_style | pyb::array::forcecast>::ensure(a);
    const double* d = wide.data();
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double v = static_cast<double>(t[i]);
      if (v == d[i] || (std::isnan(v) && std::isnan(d[i]))) continue;
      char shown[32];
      std::snprintf(shown, sizeof shown, "%.17g", d[i]);
      throw Error(cat(what, ": a ", std::string(pyb::str(a.dtype())), " array whose values ", type,
                      " cannot hold exactly (the first: ", shown, " at flat index ", i, "); convert it yourself (",
                      sizeof(T) == 4 ? "x.astype(np.float32)" : "x.astype(np.float64)", ")",
                      sizeof(T) == 4 ? " or use tapegrad.Tape64 for float64" : ""));
    }
  }
  return t;
}

template pyb::array_t<float> numpy_copy(TensorView<const float>);
template pyb::array_t<double> numpy_copy(TensorView<const double>);
template pyb::array_t<float> numpy_view(TensorView<float>, pyb::handle);
template pyb::array_t<double> numpy_view(TensorView<double>, pyb::handle);
template Tensor<float> tensor_from(const pyb::array&, const char*, bool);
template Tensor<double> tensor_from(const pyb::array&, const char*, bool);

void bind_tensor(pyb::module_& m) {
  // tapegrad.Error is a RuntimeError; a bad setting or flag (lm::SettingError) is also a ValueError.
  static pyb::exception<Error> error(m, "Error", PyExc_RuntimeError);
  pyb::object setting_base = pyb::reinterpret_borrow<pyb::object>(pyb::tuple(pyb::make_tuple(error, pyb::handle(PyExc_ValueError))));
  static PyObject* setting_error =
      PyErr_NewExceptionWithDoc("tapegrad.SettingError", "A setting out of its range or of the wrong type (also a ValueError).",
                                setting_base.ptr(), nullptr);
  m.add_object("SettingError", pyb::handle(setting_error));
  // Settings that train, but not as they suggest (TrainConfig::warnings): warnings.warn(..., SettingWarning).
  static PyObject* setting_warning = PyErr_NewExceptionWithDoc(
      "tapegrad.SettingWarning", "Settings that contradict each other without being invalid (warmup >= steps).",
      PyExc_UserWarning, nullptr);
  m.add_object("SettingWarning", pyb::handle(setting_warning));
  pyb::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const lm::UsageError& e) {
      PyErr_SetString(setting_error, e.what());
    } catch (const Error& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });

  using TensorF = Tensor<float>;
  pyb::class_<TensorF>(m, "Tensor", pyb::buffer_protocol(),
                       "A float32 tensor the engine owns (64-byte aligned). numpy reads it without a copy:\n"
                       "np.asarray(t) shares its memory. Built from any array-like (one copy, converted to float32).")
      .def(pyb::init([](const ArrayLike& a) { return tensor_from<float>(a, "Tensor"); }), pyb::arg("data"))
      .def_static("zeros", [](const std::vector<int64_t>& shape) { return TensorF(shape_of(shape, "Tensor.zeros")); },
                  pyb::arg("shape"))
      .def_static(
          "randn",
          [](const std::vector<int64_t>& shape, uint64_t seed, double std) {
            Rng rng(seed);
            return TensorF::randn(shape_of(shape, "Tensor.randn"), rng, std);
          },
          pyb::arg("shape"), pyb::arg("seed") = 0, pyb::arg("std") = 1.0)
      .def_property_readonly("shape", [](const TensorF& t) { return pyb::tuple(pyb::cast(std::vector<int64_t>(t.shape().begin(), t.shape().end()))); })
      .def("numel", &TensorF::numel)
      .def("numpy", [](pyb::object self) { return numpy_view(self.cast<TensorF&>().view(), self); },
           "A numpy view of this tensor's memory (no copy).")
      .def("__len__", [](const TensorF& t) { return t.shape().rank() == 0 ? int64_t{1} : t.shape()[0]; })
      .def("__repr__", [](pyb::object self) {
        return "tapegrad.Tensor(" + std::string(pyb::str(numpy_view(self.cast<TensorF&>().view(), self))) + ")";
      })
      .def_buffer([](TensorF& t) {
        std::vector<pyb::ssize_t> dims(t.shape().begin(), t.shape().end()), strides(dims.size());
        pyb::ssize_t stride = sizeof(float);
        for (size_t i = dims.size(); i-- > 0;) {
          strides[i] = stride;
          stride *= dims[i];
        }
        return pyb::buffer_info(t.data(), sizeof(float), pyb::format_descriptor<float>::format(),
                                static_cast<pyb::ssize_t>(dims.size()), dims, strides);
      });

  using ParamF = Parameter<float>;
  pyb::class_<ParamF>(m, "Parameter",
                      "A tensor that outlives the tape and receives its gradient (+= across backward passes,\n"
                      "until zero_grad). value and grad are numpy views of its memory.")
      .def(pyb::init([](std::string name, const ArrayLike& value) {
             return std::make_unique<ParamF>(std::move(name), tensor_from<float>(value, "Parameter"));
           }),
           pyb::arg("name"), pyb::arg("value"))
      .def_readonly("name", &ParamF::name)
      .def_property_readonly("shape", [](const ParamF& p) { return pyb::tuple(pyb::cast(std::vector<int64_t>(p.shape().begin(), p.shape().end()))); })
      .def_property(
          "value", [](pyb::object self) { return numpy_view(self.cast<ParamF&>().value().view(), self); },
          [](ParamF& p, const ArrayLike& a) {
            Tensor<float> t = tensor_from<float>(a, ("Parameter " + p.name + ".value").c_str());
            check(t.shape() == p.shape(), "Parameter ", p.name, ": value of shape ", t.shape(), " for a parameter of shape ",
                  p.shape());
            std::copy(t.data(), t.data() + t.numel(), p.value().data());
          },
          "A numpy view of the value (writes go to the parameter); assigning copies in, same shape only.")
      .def_property_readonly("grad", [](pyb::object self) { return numpy_view(self.cast<ParamF&>().grad().view(), self); })
      .def_readwrite("requires_grad", &ParamF::requires_grad)
      .def("numel", &ParamF::numel)
      .def("zero_grad", &ParamF::zero_grad)
      .def("__repr__", [](const ParamF& p) {
        std::ostringstream s;
        s << "tapegrad.Parameter('" << p.name << "', shape " << p.shape() << ")";
        return s.str();
      });
}

}  // namespace tapegrad::py
