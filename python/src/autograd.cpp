// tapegrad.Tape and tapegrad.Var (float32), Tape64 and Var64 (float64, what gradcheck hands f):
// the tape, its values with Python's operators, backward, no_grad, and gradcheck.
//   tape = tapegrad.Tape()
//   x = tape.constant(np.ones((2, 3))); w = tape.param(p)
//   loss = ((x @ w).relu() ** 2).mean(); loss.backward(); p.grad   # numpy
// Custom ops written in Python are out of scope: a Python closure in the backward pass would hold
// the GIL inside the engine's threaded backward; custom ops are C++ (lib/tapegrad/custom_op.h).
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "bind.h"
#include "scoped_block.h"
#include "tapegrad/gradcheck.h"
#include "tapegrad/ops.h"
#include "tapegrad/parameter.h"
#include "tapegrad/precision.h"

namespace tapegrad::py {

template <typename T>
std::span<const int32_t> tape_ids(PyTape<T>& t, const pyb::array& ids, const char* what) {
  const char kind = ids.dtype().kind();
  check(kind == 'i' || kind == 'u', what, ": expected integer ids, got dtype ", std::string(pyb::str(ids.dtype())));
  // Read at the array's own signedness: an unsigned id past 2^63 cast to int64 would show as negative.
  const auto copy = [&](auto tag) {
    using V = decltype(tag);
    auto c = pyb::array_t<V, pyb::array::c_style | pyb::array::forcecast>::ensure(ids);
    const int64_t n = static_cast<int64_t>(c.size());
    int32_t* out = t.get().template scratch<int32_t>(n);
    for (int64_t i = 0; i < n; ++i) {
      const V v = c.data()[i];
      check(v >= 0 && v <= V{INT32_MAX}, what, ": id ", v, " at position ", i, " is out of range [0, 2^31)");
      out[i] = static_cast<int32_t>(v);
    }
    return std::span<const int32_t>{out, static_cast<size_t>(n)};
  };
  return kind == 'u' ? copy(uint64_t{}) : copy(int64_t{});
}
template std::span<const int32_t> tape_ids(PyTape<float>&, const pyb::array&, const char*);

namespace {

template <typename T>
using VarOf = PyVar<T>;

template <typename T>
VarOf<T> wrap(const VarOf<T>& like, Var<T> v) {
  return {like.owner, v};
}

// `with tape.no_grad():` — the tape's NoGradGuard, opened and closed innermost first among the
// tape's no_grad blocks (scoped_block.h); one that outlives a lent tape is dropped without touching it.
template <typename T>
struct NoGrad {
  std::shared_ptr<PyTape<T>> owner;
  ScopedBlock<typename Tape<T>::NoGradGuard> block;

  void enter() {
    Tape<T>& tape = owner->get();
    block.enter("no_grad", owner->no_grad_open, [&] { return std::make_unique<typename Tape<T>::NoGradGuard>(tape); });
  }
  void exit() {
    if (block.open()) owner->get();  // a lent tape that no longer exists: named, not written
    block.exit("no_grad");
  }
  ~NoGrad() { block.drop(owner->owned != nullptr || owner->lent != nullptr); }
};

std::vector<int64_t> dims_of(const Shape& s) { return {s.begin(), s.end()}; }

// `a` as a constant on `like`'s tape (an array beside a Var in an operator).
template <typename T>
Var<T> constant_like(const PyVar<T>& like, const pyb::array& a, const char* what) {
  return like.get().tape().constant(tensor_from<T>(a, what));
}

// x[i], x[a:b], x[i, a:b, ...]: basic indexing, a copy with its gradient (numpy's meaning for an
// int — the dim goes — and for a slice of step 1; a negative index counts from the end).
template <typename T>
Var<T> index(Var<T> x, const pyb::object& key) {
  std::vector<pyb::object> parts;
  if (pyb::isinstance<pyb::tuple>(key)) for (pyb::handle h : key) parts.push_back(pyb::reinterpret_borrow<pyb::object>(h));
  else parts.push_back(key);
  check(static_cast<int>(parts.size()) <= x.shape().rank(), "Var[...]: ", parts.size(), " indices for a value of rank ",
        x.shape().rank());
  std::vector<int64_t> kept;  // the result's dims: every dim but those an int indexed
  for (int d = 0; d < x.shape().rank(); ++d) {
    const int64_t n = x.shape().begin()[d];
    if (d >= static_cast<int>(parts.size())) {
      kept.push_back(n);
      continue;
    }
    const pyb::object& p = parts[static_cast<size_t>(d)];
    if (pyb::isinstance<pyb::slice>(p)) {
      Py_ssize_t start = 0, stop = 0, step = 0, length = 0;
      if (PySlice_GetIndicesEx(p.ptr(), static_cast<Py_ssize_t>(n), &start, &stop, &step, &length) != 0)
        throw pyb::error_already_set();
      check(step == 1, "Var[...]: dim ", d, ": slices of step ", step, " are not supported (step 1 only)");
      x = slice(x, d, start, start + length);
      kept.push_back(length);
    } else if (PyIndex_Check(p.ptr()) && !PyBool_Check(p.ptr())) {  // an int, numpy's too; not a bool (a mask there)
      int64_t i = int_arg(p, "Var[...]");
      check(i >= -n && i < n, "Var[...]: index ", i, " is out of range for dim ", d, " of size ", n);
      if (i < 0) i += n;
      x = slice(x, d, i, i + 1);
    } else {
      throw pyb::type_error(cat("Var[...]: indices are ints and slices, got ", type_name_of(p),
                                PyBool_Check(p.ptr()) ? " (numpy reads a bool index as a mask)" : ""));
    }
  }
  return kept.size() == static_cast<size_t>(x.shape().rank()) ? x : reshape(x, Shape::from_range(kept.begin(), kept.end()));
}

// reshape's dims with one -1 replaced by what the element count leaves (numpy's rule).
std::vector<int64_t> infer_dim(std::vector<int64_t> dims, int64_t numel) {
  int64_t known = 1;
  int unknown = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != -1) {
      check(dims[i] >= 0, "Var.reshape: dim ", i, " is ", dims[i], "; dims are >= 0, or one of them -1");
      known = dims[i] == 0 ? 0 : (known > Shape::kMaxElements / dims[i] ? Shape::kMaxElements + 1 : known * dims[i]);
      continue;
    }
    check(unknown < 0, "Var.reshape: only one dim can be -1");
    unknown = static_cast<int>(i);
  }
  if (unknown >= 0) {
    check(known > 0 && numel % known == 0, "Var.reshape: ", numel, " elements do not divide into the other dims (their product ",
          known, ")");
    dims[static_cast<size_t>(unknown)] = numel / known;
  }
  return dims;
}

template <typename T>
void bind_tape(pyb::module_& m, const char* tape_name, const char* var_name) {
  using PT = PyTape<T>;
  using PV = VarOf<T>;
  const std::string dtype = sizeof(T) == 4 ? "float32" : "float64";

  pyb::class_<PV> var(m, var_name, ("A value on a tape (" + dtype + "): ops with Python operators, backward().").c_str());
  // numpy defers to the Var's reflected operators (array - Var is a Var, not an object array).
  var.attr("__array_ufunc__") = pyb::none();
  const auto unary = [&](const char* name, Var<T> (*f)(Var<T>)) {
    var.def(name, [f](const PV& x) { return wrap(x, f(x.get())); });
  };
  unary("exp", &tapegrad::exp<T>);
  unary("log", &tapegrad::log<T>);
  unary("tanh", &tapegrad::tanh<T>);
  unary("sigmoid", &tapegrad::sigmoid<T>);
  unary("relu", &tapegrad::relu<T>);
  unary("abs", &tapegrad::abs<T>);
  unary("__abs__", &tapegrad::abs<T>);
  unary("square", &tapegrad::square<T>);
  unary("sqrt", &tapegrad::sqrt<T>);
  unary("gelu", &tapegrad::gelu<T>);
  unary("silu", &tapegrad::silu<T>);
  unary("softmax", &tapegrad::softmax<T>);
  var.def_property_readonly("shape", [](const PV& x) { return pyb::tuple(pyb::cast(dims_of(x.get().shape()))); })
      .def_property_readonly("requires_grad", [](const PV& x) { return x.get().requires_grad(); })
      .def_property_readonly("tape", [](const PV& x) { return x.owner; })
      .def("numpy", [](const PV& x) { return numpy_copy<T>(x.get().value()); },
           "A copy of the value (tape memory is reused after clear()).")
      .def("item", [](const PV& x) {
        const Var<T> v = x.get();
        check(v.shape().numel() == 1, "Var.item: the value has shape ", v.shape(), "; item() needs exactly one element");
        return static_cast<double>(v.data()[0]);
      })
      .def_property_readonly("grad", [](const PV& x) { return numpy_copy<T>(TensorView<const T>(x.owner->get().grad(x.get()))); },
                             "d loss / d this value after backward(), as a numpy copy (an intermediate's needs "
                             "tape.retain_grad(True) before the forward).")
      .def(
          "backward",
          [](const PV& x, std::optional<pyb::array> upstream) {
            // The array is read under the GIL; only the engine's own work runs without it.
            std::optional<Tensor<T>> u;
            if (upstream) {
              u = tensor_from<T>(*upstream, "Var.backward");
              check(u->shape() == x.get().shape(), "Var.backward: upstream gradient of shape ", u->shape(),
                    " for a value of shape ", x.get().shape());
            }
            const Var<T> v = x.get();
            x.owner->backward_without_gil([&](Tape<T>& tape) {
              if (u) tape.backward(v, u->view());
              else tape.backward(v);
            });
          },
          pyb::arg("upstream") = pyb::none())
      .def("__neg__", [](const PV& a) { return wrap(a, -a.get()); })
      // A numpy array beside a Var is a constant on the Var's tape (numpy's broadcasting applies).
      .def("__add__", [](const PV& a, const pyb::array& b) { return wrap(a, a.get() + constant_like(a, b, "Var + array")); })
      .def("__radd__", [](const PV& a, const pyb::array& b) { return wrap(a, constant_like(a, b, "array + Var") + a.get()); })
      .def("__sub__", [](const PV& a, const pyb::array& b) { return wrap(a, a.get() - constant_like(a, b, "Var - array")); })
      .def("__rsub__", [](const PV& a, const pyb::array& b) { return wrap(a, constant_like(a, b, "array - Var") - a.get()); })
      .def("__mul__", [](const PV& a, const pyb::array& b) { return wrap(a, a.get() * constant_like(a, b, "Var * array")); })
      .def("__rmul__", [](const PV& a, const pyb::array& b) { return wrap(a, constant_like(a, b, "array * Var") * a.get()); })
      .def("__truediv__", [](const PV& a, const pyb::array& b) { return wrap(a, a.get() / constant_like(a, b, "Var / array")); })
      .def("__rtruediv__", [](const PV& a, const pyb::array& b) { return wrap(a, constant_like(a, b, "array / Var") / a.get()); })
      .def("__add__", [](const PV& a, const PV& b) { return wrap(a, a.get() + b.get()); })
      .def("__add__", [](const PV& a, double s) { return wrap(a, a.get() + s); })
      .def("__radd__", [](const PV& a, double s) { return wrap(a, s + a.get()); })
      .def("__sub__", [](const PV& a, const PV& b) { return wrap(a, a.get() - b.get()); })
      .def("__sub__", [](const PV& a, double s) { return wrap(a, a.get() - s); })
      .def("__rsub__", [](const PV& a, double s) { return wrap(a, s - a.get()); })
      .def("__mul__", [](const PV& a, const PV& b) { return wrap(a, a.get() * b.get()); })
      .def("__mul__", [](const PV& a, double s) { return wrap(a, a.get() * s); })
      .def("__rmul__", [](const PV& a, double s) { return wrap(a, s * a.get()); })
      .def("__truediv__", [](const PV& a, const PV& b) { return wrap(a, a.get() / b.get()); })
      .def("__truediv__", [](const PV& a, double s) { return wrap(a, a.get() / s); })
      .def("__rtruediv__", [](const PV& a, double s) { return wrap(a, s / a.get()); })
      .def("__pow__", [](const PV& a, double p) { return wrap(a, tapegrad::pow(a.get(), p)); })
      .def("__matmul__", [](const PV& a, const PV& b) { return wrap(a, matmul(a.get(), b.get())); })
      .def(
          "sum", [](const PV& x, std::optional<int> dim, bool keepdim) {
            return wrap(x, dim ? tapegrad::sum(x.get(), *dim, keepdim) : tapegrad::sum(x.get()));
          },
          pyb::arg("dim") = pyb::none(), pyb::arg("keepdim") = false)
      .def(
          "mean", [](const PV& x, std::optional<int> dim, bool keepdim) {
            return wrap(x, dim ? tapegrad::mean(x.get(), *dim, keepdim) : tapegrad::mean(x.get()));
          },
          pyb::arg("dim") = pyb::none(), pyb::arg("keepdim") = false)
      .def("max", [](const PV& x, int dim, bool keepdim) { return wrap(x, tapegrad::max(x.get(), dim, keepdim)); },
           pyb::arg("dim"), pyb::arg("keepdim") = false)
      .def("reshape", [](const PV& x, const pyb::args& args) {
        // reshape(4, -1) or reshape((4, -1)) / reshape([4, -1]), as numpy and torch take both.
        std::vector<int64_t> dims;
        if (args.size() == 1) {
          dims = int_or_ints_arg(args[0], "Var.reshape dims");
        } else {
          for (const pyb::handle a : args) dims.push_back(int_arg(a, "Var.reshape dims"));
        }
        return wrap(x, reshape(x.get(), shape_of(infer_dim(dims, x.get().shape().numel()), "Var.reshape")));
      }, "reshape(4, -1) or reshape([4, -1]): one dim may be -1, inferred from the element count (as numpy's).")
      .def("transpose", [](const PV& x, int d0, int d1) { return wrap(x, transpose(x.get(), d0, d1)); })
      .def("__getitem__", [](const PV& x, const pyb::object& key) { return wrap(x, index(x.get(), key)); },
           "x[0], x[1:3], x[:, -1]: ints drop their dim, slices of step 1 keep it; the gradient flows back.")
      // As torch's tensors: len() is the first dim, and iterating yields x[0], x[1], ... (without
      // __iter__ Python would index past the end and meet an Error, not the end of the loop).
      .def("__len__", [](const PV& x) {
        const Shape& s = x.get().shape();
        if (s.rank() == 0) throw pyb::type_error("len() of a 0-d Var");
        return s[0];
      })
      // np.asarray(x) is x.numpy() (a copy), as for torch's tensors.
      .def("__array__", [](const PV& x, const pyb::object& dtype, const pyb::object& /*copy*/) {
        const pyb::object a = numpy_copy<T>(x.get().value());
        return dtype.is_none() ? a : a.attr("astype")(dtype);
      }, pyb::arg("dtype") = pyb::none(), pyb::arg("copy") = pyb::none())
      .def("__iter__", [](const PV& x) {
        const Shape& s = x.get().shape();
        if (s.rank() == 0) throw pyb::type_error("iteration over a 0-d Var");
        pyb::list rows;
        for (int64_t i = 0; i < s[0]; ++i) rows.append(wrap(x, index(x.get(), pyb::int_(i))));
        return rows.attr("__iter__")();
      })
      .def_property_readonly("T", [](const PV& x) {
        const Var<T> v = x.get();
        return v.shape().rank() < 2 ? x : wrap(x, transpose(v, -2, -1));
      }, "The last two dims swapped (a value of rank < 2 as it is).")
      .def("__repr__", [var_name](const PV& x) {
        const Var<T> v = x.get();
        std::ostringstream s;
        s << "tapegrad." << var_name << "(shape " << v.shape() << (v.requires_grad() ? ", requires_grad" : "") << ")";
        return s.str();
      });

  pyb::class_<NoGrad<T>>(m, (std::string("_NoGrad") + tape_name).c_str())
      .def("__enter__", [](NoGrad<T>& g) { g.enter(); })
      .def("__exit__", [](NoGrad<T>& g, pyb::args) { g.exit(); });

  pyb::class_<PT, std::shared_ptr<PT>>(m, tape_name,
                                       ("The record of one forward pass (" + dtype + "), for one backward pass. clear() before the next.").c_str())
      .def(pyb::init<>())
      .def("constant", [](std::shared_ptr<PT> t, const ArrayLike& a) {
        return PV{t, t->get().constant(tensor_from<T>(a, "Tape.constant"))};
      }, pyb::arg("value"), "A value that needs no gradient (a copy of the array).")
      .def("param", [tape_name](std::shared_ptr<PT> t, pyb::object p) {
        if constexpr (std::is_same_v<T, float>) {
          if (!pyb::isinstance<Parameter<T>>(p))
            throw pyb::type_error(cat(tape_name, ".param: expected a tapegrad.Parameter, got ", type_name_of(p)));
          t->keep.push_back(p);  // the node reads and accumulates into it
          return PV{t, t->get().param(p.cast<Parameter<T>&>())};
        } else {
          // Parameters are float32; float64 is for checking gradients, where every input is a constant.
          throw pyb::type_error(cat(tape_name, ".param: got ", type_name_of(p), "; a ", tape_name,
                                    " has no parameters (tapegrad.Parameter is float32 and records on a Tape): give it "
                                    "float64 inputs as constants, ",
                                    tape_name, ".constant(array), as tg.gradcheck gives f its inputs"));
        }
      }, pyb::arg("parameter"), "The parameter as a value; backward() adds into its grad.")
      .def("backward", [](std::shared_ptr<PT> t, const PV& loss) {
        check(loss.owner == t, "Tape.backward: the loss belongs to another tape");
        const Var<T> v = loss.get();
        t->backward_without_gil([&](Tape<T>& tape) { tape.backward(v); });
      }, pyb::arg("loss"))
      .def("clear", &PT::clear, "Forgets every value and node (their Vars become stale); parameters keep their gradients.")
      .def("no_grad", [](std::shared_ptr<PT> t) { auto g = std::make_unique<NoGrad<T>>(); g->owner = t; return g; },
           "with tape.no_grad(): ops record no backward nodes (evaluation).")
      .def("retain_grad", [](std::shared_ptr<PT> t, bool on) { t->get().retain_intermediate_grads(on); }, pyb::arg("on") = true)
      .def("manual_seed", [](std::shared_ptr<PT> t, uint64_t seed) { t->get().manual_seed(seed); })
      .def_property_readonly("num_nodes", [](std::shared_ptr<PT> t) { return t->get().num_nodes(); })
      .def("__repr__", [tape_name](std::shared_ptr<PT> t) {
        if (!t->owned && t->lent == nullptr) return cat("tapegrad.", tape_name, "(gone: lent for a call that ended)");
        return cat("tapegrad.", tape_name, "(", t->get().num_nodes(), " nodes)");
      });
}

}  // namespace

// `with tapegrad.autocast("bf16"):` — torch.autocast's habit: float ops recorded inside run their
// GEMMs on bf16 operands (and the norms in bf16 with norms="bf16"); each op keeps the precision it
// was recorded with for its backward. Per thread, as the C++ Autocast it holds: a block is exited
// on the thread that entered it, innermost first (scoped_block.h).
struct PyAutocast {
  ComputePrecision precision;
  ScopedBlock<Autocast> block;
  std::thread::id thread;

  // The calling thread's open blocks.
  static std::vector<uint64_t>& open_here() {
    thread_local std::vector<uint64_t> ids;
    return ids;
  }
  void enter() {
    block.enter("autocast", open_here(), [&] { return std::make_unique<Autocast>(precision); });
    thread = std::this_thread::get_id();
  }
  void exit() {
    check(!block.open() || thread == std::this_thread::get_id(),
          "autocast: exited on another thread than the one that entered it");
    block.exit("autocast");
  }
  ~PyAutocast() { block.drop(thread == std::this_thread::get_id()); }
};

void bind_autograd(pyb::module_& m) {
  bind_tape<float>(m, "Tape", "Var");
  bind_tape<double>(m, "Tape64", "Var64");

  pyb::class_<PyAutocast>(m, "autocast",
                          "with tapegrad.autocast('bf16'): float GEMMs recorded inside take bfloat16 operands with float32 "
                          "sums (torch.autocast's bf16); norms='bf16' also computes the norms in bf16. Backward runs at the "
                          "precision each op was recorded with.")
      .def(pyb::init([](const std::string& dtype, const std::string& norms) {
             auto a = std::make_unique<PyAutocast>();
             a->precision = {parse_precision(dtype, "autocast dtype"), parse_precision(norms, "autocast norms")};
             return a;
           }),
           pyb::arg("dtype") = "bf16", pyb::arg("norms") = "fp32")
      .def("__enter__", [](PyAutocast& a) { a.enter(); })
      .def("__exit__", [](PyAutocast& a, pyb::args) { a.exit(); })
      .def("__repr__", [](const PyAutocast& a) {
        return cat("tapegrad.autocast(dtype='", precision_name(a.precision.gemm), "', norms='",
                   precision_name(a.precision.norms), "')");
      });

  m.def(
      "cross_entropy",
      [](const PyVar<float>& logits, const ArrayLike& targets, double z_loss) {
        const auto ids = tape_ids(*logits.owner, targets.array, "cross_entropy targets");
        return PyVar<float>{logits.owner, cross_entropy(logits.get(), ids, z_loss)};
      },
      pyb::arg("logits"), pyb::arg("targets"), pyb::arg("z_loss") = 0.0,
      "Mean cross-entropy of logits (..., V) against integer targets (one per row); the targets are copied.");
  m.def("mse_loss", [](const PyVar<float>& p, const PyVar<float>& t) { return PyVar<float>{p.owner, mse_loss(p.get(), t.get())}; });

  m.def(
      "gradcheck",
      [](pyb::function f, const std::vector<pyb::array>& inputs, std::string name, double atol, double rtol, bool variants) {
        std::vector<Tensor<double>> xs;
        for (const auto& a : inputs) xs.push_back(tensor_from<double>(a, "gradcheck input"));
        LentTapes<double> lent;
        const TensorFunction fn = [&](Tape<double>& tape, std::span<const Var<double>> in) {
          const auto owner = lent.lend(tape);
          pyb::tuple args(in.size());
          for (size_t i = 0; i < in.size(); ++i) args[i] = pyb::cast(PyVar<double>{owner, in[i]});
          const pyb::object y = f(*args);
          if (!pyb::isinstance<PyVar<double>>(y))
            throw pyb::type_error(cat("gradcheck: f must return a Var64 computed from its arguments, got ", type_name_of(y)));
          const PyVar<double>& out = y.cast<const PyVar<double>&>();
          check(out.owner == owner, "gradcheck: f must return a Var64 computed from its arguments");
          return out.var;
        };
        GradcheckOptions o;
        o.atol = atol;
        o.rtol = rtol;
        o.variants = variants;
        return gradcheck(name, fn, xs, o);
      },
      pyb::arg("f"), pyb::arg("inputs"), pyb::arg("name") = "f", pyb::arg("atol") = 1e-5, pyb::arg("rtol") = 1e-3,
      pyb::arg("variants") = true,
      "Checks f's hand or composed gradients against float64 central differences: f(*vars) -> Var64,\n"
      "inputs a list of arrays. Returns a GradcheckResult (ok, message, max_rel_error, ...).");
  pyb::class_<GradcheckResult>(m, "GradcheckResult")
      .def_readonly("ok", &GradcheckResult::ok)
      .def_readonly("message", &GradcheckResult::message)
      .def_readonly("max_rel_error", &GradcheckResult::max_rel_error)
      .def_readonly("max_abs_error", &GradcheckResult::max_abs_error)
      .def_readonly("variant", &GradcheckResult::variant)
      .def_readonly("variants_run", &GradcheckResult::variants_run)
      .def("__bool__", [](const GradcheckResult& r) { return r.ok; })
      .def("__repr__", [](const GradcheckResult& r) { return r.message; });
}

}  // namespace tapegrad::py
