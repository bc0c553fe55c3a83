// Ops and norms written in Python.
//
// tapegrad.Function, as torch.autograd.Function: a class with static forward(ctx, *inputs) and
// backward(ctx, *grad_outputs), numpy arrays in and out; Fn.apply(*inputs) records one node. Its
// Vars' values reach forward as numpy copies (other arguments as they are); backward gets d loss /
// d output and returns one gradient per input (None for an input without one). The node's state
// (the class, ctx) is owned by the tape until clear() (Tape::keep_alive); its backward takes the
// GIL, so it runs inside the engine's backward on any thread, one Python call at a time.
//
// tapegrad.nn.register_norm(name, cls): a tapegrad.nn.Module subclass built as cls(dim, eps=eps)
// becomes a norm of the registry (nn/norm.h), so TrainConfig(norm=name), the lab and checkpoints
// know it. Inside a C++ model it is a UnaryModule whose parameters are C++ parameters (the Python
// module's Parameter attributes are rebound to them, so the optimizer, checkpoints and the
// gradient clipping see them) and whose forward calls the Python module with the GIL taken.
#include <pybind11/numpy.h>

#include "bind.h"
#include "tapegrad/nn/language_model.h"
#include "tapegrad/nn/norm.h"

namespace tapegrad::py {

namespace {

// Python objects owned from C++, released under the GIL wherever the last owner drops them.
struct PyState {
  pyb::object cls, ctx;
  std::string name;
  std::vector<int> var_at;    // argument position of each Var input
  std::vector<Shape> shapes;  // their shapes
  ~PyState() {
    pyb::gil_scoped_acquire gil;
    cls = pyb::object(), ctx = pyb::object();
  }
};

// Called in the catch of a Python callback's error: an Exception becomes an Error that says which
// callback raised it (the engine's callers catch Errors); KeyboardInterrupt and SystemExit are
// not errors of the callback but the user stopping the program, and go on as themselves, as
// torch lets them out of a Function's backward.
[[noreturn]] void rethrow_python_error(pyb::error_already_set& e, const std::string& context) {
  if (!e.matches(PyExc_Exception)) throw;
  throw Error(cat(context, " raised ", e.what()));
}

template <typename T>
PyVar<T> apply_function(const pyb::object& cls, const pyb::object& ctx, const pyb::tuple& args) {
  const std::string name = pyb::str(cls.attr("__name__"));
  std::shared_ptr<PyTape<T>> owner;
  std::vector<Var<T>> vars;
  auto state = std::make_shared<PyState>();
  pyb::list forward_args;
  forward_args.append(ctx);
  for (size_t i = 0; i < args.size(); ++i) {
    const pyb::handle a = args[i];
    if (pyb::isinstance<PyVar<T>>(a)) {
      const PyVar<T>& v = a.cast<const PyVar<T>&>();
      check(!owner || owner.get() == v.owner.get(), name, ".apply: argument ", i, " is on another tape than argument ",
            state->var_at.empty() ? 0 : state->var_at[0]);
      owner = v.owner;
      const Var<T> var = v.get();
      check(static_cast<int>(vars.size()) < Tape<T>::kMaxInputs, name, ".apply: at most ", Tape<T>::kMaxInputs,
            " Var inputs, got more");
      vars.push_back(var);
      state->var_at.push_back(static_cast<int>(i));
      state->shapes.push_back(var.shape());
      forward_args.append(numpy_copy<T>(var.value()));
    } else {
      forward_args.append(a);  // a constant: an array, a number, anything forward takes
    }
  }
  check(owner != nullptr, name, ".apply: no argument is a ", std::is_same_v<T, float> ? "Var" : "Var64",
        " (a Function records on the tape of its Var inputs)");
  Tape<T>& tape = owner->get();
  const pyb::object result = cls.attr("forward")(*forward_args);
  check(pyb::isinstance<pyb::array>(result) || pyb::isinstance<pyb::float_>(result) || pyb::isinstance<pyb::int_>(result),
        name, ".forward returned ", type_name_of(result),
        "; it must return a numpy array");
  const Tensor<T> value = tensor_from<T>(pyb::array::ensure(result), (name + ".forward's result").c_str());
  Var<T> out = tape.make_output("python_function", value.shape(), std::span<const Var<T>>(vars));
  std::copy(value.data(), value.data() + value.numel(), out.data());
  if (out.requires_grad()) {
    state->cls = cls, state->ctx = ctx, state->name = name;
    PyState* s = state.get();
    tape.keep_alive(std::move(state));
    const int n_args = static_cast<int>(args.size());
    const Shape out_shape = value.shape();
    tape.record("python_function", std::span<const Var<T>>(vars), out, [s, n_args, out_shape](const T* dy, T* const* dx) {
      pyb::gil_scoped_acquire gil;
      pyb::object grads;
      try {
        grads = s->cls.attr("backward")(s->ctx, numpy_copy<T>(TensorView<const T>(dy, out_shape)));
      } catch (pyb::error_already_set& e) {
        rethrow_python_error(e, s->name + ".backward");
      }
      if (!pyb::isinstance<pyb::tuple>(grads)) grads = pyb::make_tuple(grads);
      const auto g = grads.cast<pyb::tuple>();
      check(static_cast<int>(g.size()) == n_args, s->name, ".backward returned ", g.size(), " gradients for ", n_args,
            " inputs (one per input of forward, None where there is none)");
      for (size_t k = 0; k < s->var_at.size(); ++k) {
        const pyb::handle gk = g[static_cast<size_t>(s->var_at[k])];
        if (!dx[k] || gk.is_none()) continue;
        const std::string what = cat(s->name, ".backward's gradient ", s->var_at[k]);
        const Tensor<T> t = tensor_from<T>(pyb::array::ensure(gk), what.c_str());
        check(t.shape() == s->shapes[k], what, " has shape ", t.shape(), ", the input ", s->shapes[k]);
        for (int64_t i = 0; i < t.numel(); ++i) dx[k][i] += t.data()[i];
      }
    });
  }
  return {owner, out};
}

// The Python module's parameters, in its named_parameters() order, for a C++ module to adopt (they
// stay the Python objects': a C++ module inside the Python one, tg.nn.Linear say, keeps using
// its own), with their values at construction (what reset_parameters() restores).
std::vector<std::pair<std::string, Parameter<float>*>> python_parameters(const pyb::object& m, const std::string& what,
                                                                         std::vector<Tensor<float>>& initial) {
  check(pyb::hasattr(m, "named_parameters") && pyb::hasattr(m, "forward"), what, ": ",
        type_name_of(m), " is not a tapegrad.nn.Module");
  std::vector<std::pair<std::string, Parameter<float>*>> out;
  for (const pyb::handle item : m.attr("named_parameters")()) {
    check(pyb::isinstance<pyb::tuple>(item) && pyb::len(item) == 2 && pyb::isinstance<pyb::str>(item[pyb::int_(0)]) &&
              pyb::isinstance<Parameter<float>>(item[pyb::int_(1)]),
          what, ": ", type_name_of(m), ".named_parameters() must yield (str, tapegrad.Parameter) pairs, got ",
          type_name_of(item), pyb::isinstance<pyb::tuple>(item) ? cat(" ", std::string(pyb::repr(item)).substr(0, 80)) : "");
    const auto pair = item.cast<pyb::tuple>();
    auto& p = pair[1].cast<Parameter<float>&>();
    out.emplace_back(pair[0].cast<std::string>(), &p);
    initial.push_back(p.value());
  }
  return out;
}

// A Python object owned from C++: released under the GIL.
std::shared_ptr<pyb::object> held_object(pyb::object o) {
  return {new pyb::object(std::move(o)), [](pyb::object* p) {
            pyb::gil_scoped_acquire gil;
            delete p;
          }};
}

// A norm written in Python, inside a C++ model (see the header comment).
class PyNorm : public nn::UnaryModule<float> {
 public:
  PyNorm(std::string norm, pyb::handle cls, const nn::NormSpec& spec) : norm_(std::move(norm)) {
    pyb::gil_scoped_acquire gil;
    module_ = held_object(cls(spec.dim, pyb::arg("eps") = spec.eps));
    for (auto& [name, p] : python_parameters(*module_, "norm '" + norm_ + "'", initial_)) this->adopt_parameter(name, *p);
  }

  Var<float> forward(Var<float> x) override {
    pyb::gil_scoped_acquire gil;
    LentTapes<float> lent;
    const auto owner = py_tape_for(x.tape(), lent);
    pyb::object y;
    try {
      y = (*module_)(PyVar<float>{owner, x});
    } catch (pyb::error_already_set& e) {
      rethrow_python_error(e, cat("norm '", norm_, "': forward"));
    }
    check(pyb::isinstance<PyVar<float>>(y), "norm '", norm_, "': forward returned ",
          type_name_of(y), ", not a Var");
    const Var<float> out = y.cast<const PyVar<float>&>().get();
    check(&out.tape() == &x.tape() && out.shape() == x.shape(), "norm '", norm_,
          "': forward must return a Var of its input's shape on its input's tape, got ", out.shape(), " for ", x.shape());
    return out;
  }

  // The Python constructor's values: what a fresh model of this norm starts from.
  void reset_parameters(Rng&) override {
    size_t k = 0;
    for (auto& [name, p] : this->named_parameters()) p->value() = initial_.at(k++);
  }
  std::string type_name() const override { return "PythonNorm"; }
  std::string options_repr() const override { return norm_; }

 private:
  std::string norm_;
  std::shared_ptr<pyb::object> module_;
  std::vector<Tensor<float>> initial_;
};

// A language model written in Python, for lm::Trainer: a tapegrad.nn.Module whose
// forward(tape, ids) maps ids (B, T) to logits (B, T, V); the loss is the trainer's cross-entropy.
class PyLanguageModel : public nn::LanguageModel<float> {
 public:
  PyLanguageModel(pyb::object model, int64_t vocab, int64_t ctx) : vocab_(vocab), ctx_(ctx) {
    module_ = held_object(std::move(model));
    for (auto& [name, p] : python_parameters(*module_, "Trainer model", initial_)) this->adopt_parameter(name, *p);
  }

  Output forward(Tape<float>& tape, std::span<const int32_t> ids, int64_t B, int64_t T,
                 std::span<const int32_t> targets) override {
    Var<float> logits;
    {
      pyb::gil_scoped_acquire gil;
      LentTapes<float> lent;
      const auto owner = py_tape_for(tape, lent);
      pyb::array_t<int32_t> a({B, T});
      std::copy(ids.begin(), ids.end(), a.mutable_data());
      pyb::object y;
      try {
        y = (*module_)(owner, a);
      } catch (pyb::error_already_set& e) {
        rethrow_python_error(e, "Trainer model: forward");
      }
      check(pyb::isinstance<PyVar<float>>(y), "Trainer model: forward(tape, ids) returned ",
            type_name_of(y), "; it must return the logits, a Var (B, T, vocab)");
      logits = y.cast<const PyVar<float>&>().get();
    }
    check(&logits.tape() == &tape && logits.shape() == Shape{B, T, vocab_}, "Trainer model: forward must return logits of shape (",
          B, ", ", T, ", ", vocab_, ") on the tape it is given, got ", logits.shape());
    return nn::lm_output(logits, targets);
  }
  int64_t vocab_size() const override { return vocab_; }
  int64_t ctx() const override { return ctx_; }
  void reset_parameters(Rng&) override {
    size_t k = 0;
    for (auto& [name, p] : this->named_parameters()) p->value() = initial_.at(k++);
  }
  std::string type_name() const override { return "PythonModel"; }

 private:
  int64_t vocab_, ctx_;
  std::shared_ptr<pyb::object> module_;
  std::vector<Tensor<float>> initial_;
};

}  // namespace

std::unique_ptr<nn::LanguageModel<float>> python_language_model(pyb::object model, int64_t vocab, int64_t ctx) {
  return std::make_unique<PyLanguageModel>(std::move(model), vocab, ctx);
}

void bind_function(pyb::module_& m) {
  m.def("_apply_function", &apply_function<float>, pyb::arg("cls"), pyb::arg("ctx"), pyb::arg("args"));
  m.def("_apply_function64", &apply_function<double>, pyb::arg("cls"), pyb::arg("ctx"), pyb::arg("args"));

  auto nn_module = m.attr("_nn").cast<pyb::module_>();
  nn_module.def(
      "_register_python_norm",
      [](const std::string& name, pyb::object cls, const std::string& label, const std::string& description) {
        // The registry lives as long as the process: it keeps its reference to the class forever
        // (never released, so nothing is released after the interpreter is gone).
        PyObject* held = cls.inc_ref().ptr();
        nn::NormEntry e;
        e.name = name, e.label = label, e.description = description;
        e.make_float = [name, held](const nn::NormSpec& spec) -> std::unique_ptr<nn::UnaryModule<float>> {
          return std::make_unique<PyNorm>(name, pyb::handle(held), spec);
        };
        e.make_double = [name](const nn::NormSpec&) -> std::unique_ptr<nn::UnaryModule<double>> {
          throw Error(cat("norm '", name, "' is written in Python and runs in float32 only; a float64 copy of the model "
                          "(sharpness measurements, float64 gradchecks of a decoder) needs a C++ norm"));
        };
        nn::register_norm(std::move(e));
      },
      pyb::arg("name"), pyb::arg("cls"), pyb::arg("label"), pyb::arg("description"));
}

}  // namespace tapegrad::py
