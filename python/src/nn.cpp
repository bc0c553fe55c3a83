// tapegrad.nn's C++ modules: Linear, Embedding, every registered norm (by class or by name),
// attention, MLP, dropout and the activations. Each is held by shared_ptr; calling one on a Var
// records it on the Var's tape and keeps the module alive until the tape is cleared. Sequential
// and Module (for models of your own) are Python classes in tapegrad/nn.py over these.
#include <cmath>
#include <sstream>

#include "bind.h"
#include "tapegrad/nn/hook_calls.h"
#include "tapegrad/nn.h"
#include "tapegrad/nn/init.h"
#include "tapegrad/nn/norm.h"

namespace tapegrad::py {

namespace {

using M = nn::Module<float>;
using U = nn::UnaryModule<float>;
using PV = PyVar<float>;

pyb::dict state_dict_of(pyb::object self) {
  pyb::dict d;
  for (auto& [name, p] : self.cast<M&>().named_parameters()) d[pyb::str(name)] = numpy_view(p->value().view(), self);
  return d;
}

// A state dict from Python: any mapping (dict, OrderedDict, torch's) of str to float32 arrays.
std::map<std::string, Tensor<float>> source_tensors(const pyb::handle& source) {
  if (!PyMapping_Check(source.ptr()) || !pyb::hasattr(source, "items") || PySequence_Check(source.ptr()))
    throw pyb::type_error(cat("load_state_dict: expected a mapping of names to arrays (a dict, as state_dict() "
                              "returns), got ", type_name_of(source)));
  std::map<std::string, Tensor<float>> tensors;
  for (const pyb::handle item : source.attr("items")()) {
    const pyb::tuple kv = pyb::reinterpret_borrow<pyb::tuple>(item);
    if (!pyb::isinstance<pyb::str>(kv[0]))
      throw pyb::type_error(cat("load_state_dict: keys are parameter names (str), got ", type_name_of(kv[0])));
    const std::string key = pyb::str(kv[0]);
    tensors.emplace(key, tensor_from<float>(pyb::array::ensure(kv[1]), ("load_state_dict '" + key + "'").c_str()));
  }
  return tensors;
}

LoadReport load_state_dict_into(M& m, const pyb::object& source, bool strict) {
  LoadOptions o;
  o.strict = strict;
  return m.load_state_dict(source_tensors(source), o);
}

// The same load for a module written in Python: its named_parameters() as the target.
LoadReport load_into_parameters(const pyb::list& named, const pyb::object& source, bool strict, const std::string& what) {
  StateDict<float> target;
  for (const pyb::handle item : named) {
    const pyb::tuple kv = pyb::reinterpret_borrow<pyb::tuple>(item);
    target.emplace_back(pyb::str(kv[0]), &kv[1].cast<Parameter<float>&>().value());
  }
  const auto tensors = source_tensors(source);
  LoadOptions o;
  o.strict = strict;
  return load_state_dict(tensors, target, o, what);
}

template <typename Cls, typename... Args>
auto unary(pyb::module_& m, const char* name, const char* doc) {
  return pyb::class_<Cls, U, std::shared_ptr<Cls>>(m, name, doc);
}

}  // namespace

namespace {
// torch.nn.functional's layer_norm and rms_norm: one fused tape node each (the kernels of
// LayerNorm and RMSNorm), for a norm of your own built around them. weight and bias: None, a
// Var on x's tape, or a Parameter; normalized_shape, if given, must be x's last dimension.
template <typename T>
PyVar<T> functional_norm(const char* name, const PyVar<T>& x, const pyb::object& shape, const pyb::object& weight,
                         const pyb::object& bias, double eps) {
  const Var<T> xv = x.get();
  const int64_t C = xv.shape().last();
  if (!shape.is_none()) {
    const auto dims = int_or_ints_arg(shape, cat(name, " normalized_shape"));
    check(dims == std::vector<int64_t>{C}, name, ": normalized_shape must be the last dimension (", C,
          ",); tapegrad normalises over the last dimension only");
  }
  check_finite(eps, Bound::kNonNegative, name, ": eps");
  const auto operand = [&](const pyb::object& o, const char* what) -> Var<T> {
    if (o.is_none()) return Var<T>();
    Var<T> v;
    if (pyb::isinstance<PyVar<T>>(o)) {
      const PyVar<T>& pv = o.cast<const PyVar<T>&>();
      check(pv.owner == x.owner, name, ": ", what, " is on another tape than the input");
      v = pv.get();
    } else if constexpr (std::is_same_v<T, float>) {
      check(pyb::isinstance<Parameter<float>>(o), name, ": ", what, " must be None, a Var or a Parameter, got ",
            type_name_of(o));
      x.owner->keep.push_back(o);
      v = x.owner->get().param(o.cast<Parameter<float>&>());
    } else {
      throw Error(cat(name, ": ", what, " must be None or a Var64 on the input's tape"));
    }
    check(v.shape() == Shape{C}, name, ": ", what, " has shape ", v.shape(), "; it must be (", C, ",)");
    return v;
  };
  const Var<T> w = operand(weight, "weight");
  if (std::string_view(name) == "rms_norm") return {x.owner, nn::rms_norm(xv, w, eps)};
  const Var<T> b = operand(bias, "bias");
  check(!b.defined() || w.defined(), name, ": a bias needs a weight (give ones for none)");
  return {x.owner, nn::layer_norm(xv, w, b, eps)};
}

template <typename T>
void bind_functional_norms(pyb::module_& m) {
  m.def("layer_norm", [](const PyVar<T>& x, pyb::object shape, pyb::object weight, pyb::object bias, double eps) {
    return functional_norm<T>("layer_norm", x, shape, weight, bias, eps);
  }, pyb::arg("input"), pyb::arg("normalized_shape") = pyb::none(), pyb::arg("weight") = pyb::none(),
     pyb::arg("bias") = pyb::none(), pyb::arg("eps") = 1e-5,
     "(x - mean) / sqrt(var + eps) * weight + bias over the last dimension: one fused node (torch.nn.functional.layer_norm).");
  m.def("rms_norm", [](const PyVar<T>& x, pyb::object shape, pyb::object weight, double eps) {
    return functional_norm<T>("rms_norm", x, shape, weight, pyb::none(), eps);
  }, pyb::arg("input"), pyb::arg("normalized_shape") = pyb::none(), pyb::arg("weight") = pyb::none(),
     pyb::arg("eps") = 1e-5, "x / sqrt(mean(x^2) + eps) * weight over the last dimension: one fused node (torch.nn.functional.rms_norm).");
}
}  // namespace

void bind_nn(pyb::module_& top) {
  pyb::module_ m = top.def_submodule("_nn", "C++ modules (tapegrad.nn re-exports them)");
  m.def("manual_seed", &nn::manual_seed, pyb::arg("seed"), "Seeds the generator new modules draw their weights from.");

  m.def("_load_into_parameters", &load_into_parameters);
  pyb::class_<LoadReport>(m, "LoadReport")
      .def_readonly("missing", &LoadReport::missing)
      .def_readonly("unexpected", &LoadReport::unexpected)
      .def("__repr__", [](const LoadReport& r) {
        return "LoadReport(missing=" + std::string(pyb::str(pyb::cast(r.missing))) +
               ", unexpected=" + std::string(pyb::str(pyb::cast(r.unexpected))) + ")";
      });

  pyb::class_<M, std::shared_ptr<M>>(m, "Module", "The base of the C++ modules.")
      .def("parameters", &M::parameters, pyb::return_value_policy::reference_internal)
      .def("named_parameters", &M::named_parameters, pyb::return_value_policy::reference_internal)
      .def("parameter", &M::parameter, pyb::arg("name"), pyb::return_value_policy::reference_internal)
      .def("num_parameters", &M::num_parameters)
      .def("named_modules", &M::named_modules, pyb::return_value_policy::reference_internal,
           "[(dotted path, module)] for this module (\"\") and every descendant, depth-first (torch's named_modules).")
      .def("modules", [](M& mod) {
        std::vector<M*> out;
        for (auto& [name, child] : mod.named_modules()) out.push_back(child);
        return out;
      }, pyb::return_value_policy::reference_internal)
      .def("get_submodule", [](M& mod, const std::string& path) -> M& {
        std::string known;
        for (auto& [name, child] : mod.named_modules()) {
          if (name == path) return *child;
          if (!name.empty()) known += (known.empty() ? "" : ", ") + name;
        }
        // AttributeError, as torch's get_submodule and tapegrad.nn.Module's raise it.
        throw pyb::attribute_error(cat("get_submodule: ", mod.type_name(), " has no module '", path, "'; ",
                                       known.empty() ? "it has no submodules" : "it has: " + known));
      }, pyb::arg("path"), pyb::return_value_policy::reference_internal, "The module at this dotted path (\"blocks.1.norm2\").")
      .def("state_dict", &state_dict_of, "Every parameter's value by dotted name, as numpy views of the module's memory.")
      .def("load_state_dict", &load_state_dict_into, pyb::arg("state_dict"), pyb::arg("strict") = true)
      .def("zero_grad", &M::zero_grad)
      .def("train", [](M& mod, bool on) { mod.train(on); }, pyb::arg("mode") = true)
      .def("eval", &M::eval)
      .def_property_readonly("training", &M::is_training)
      .def("reset_parameters", [](M& mod, uint64_t seed) {
        Rng rng(seed);
        mod.reset_parameters(rng);
      }, pyb::arg("seed"))
      .def("__repr__", &M::summary);

  pyb::class_<U, M, std::shared_ptr<U>>(m, "UnaryModule", "A module from one Var to one Var: call it on a Var.")
      .def("__call__", [](pyb::object self, const PV& x) {
        U& mod = self.cast<U&>();
        const RecordingOn recording(x.owner);  // for the hooks
        Var<float> y = mod(x.get());
        x.owner->keep.push_back(self);  // the nodes point to its parameters
        return PV{x.owner, y};
      }, pyb::arg("x"));

  unary<nn::Linear<float>>(m, "Linear", "y = x W^T + b (torch.nn.Linear's layout and init).")
      .def(pyb::init([](int64_t in, int64_t out, bool bias, double init_std) {
             return std::make_shared<nn::Linear<float>>(nn::LinearOptions{.in = in, .out = out, .bias = bias, .init_std = init_std});
           }),
           pyb::arg("in_features"), pyb::arg("out_features"), pyb::arg("bias") = true, pyb::arg("init_std") = 0.0);
  unary<nn::LayerNorm<float>>(m, "LayerNorm", "gamma (x - mean) / sqrt(var + eps) + beta over the last dim.")
      .def(pyb::init([](int64_t dim, double eps, bool affine, bool bias) {
             return std::make_shared<nn::LayerNorm<float>>(
                 nn::LayerNormOptions{.dim = dim, .eps = eps, .elementwise_affine = affine, .bias = bias});
           }),
           pyb::arg("dim"), pyb::arg("eps") = 1e-5, pyb::arg("elementwise_affine") = true, pyb::arg("bias") = true);
  unary<nn::RMSNorm<float>>(m, "RMSNorm", "w x / sqrt(mean(x^2) + eps) over the last dim.")
      .def(pyb::init([](int64_t dim, double eps, bool affine) {
             return std::make_shared<nn::RMSNorm<float>>(nn::RMSNormOptions{.dim = dim, .eps = eps, .elementwise_affine = affine});
           }),
           pyb::arg("dim"), pyb::arg("eps") = 1e-5, pyb::arg("elementwise_affine") = true);
  unary<nn::CausalSelfAttention<float>>(m, "CausalSelfAttention", "Causal multi-head self-attention over (B, T, C).")
      .def(pyb::init([](int64_t dim, int64_t heads, bool bias) {
             return std::make_shared<nn::CausalSelfAttention<float>>(nn::AttentionOptions{.dim = dim, .heads = heads, .bias = bias});
           }),
           pyb::arg("dim"), pyb::arg("heads"), pyb::arg("bias") = true);
  unary<nn::MLP<float>>(m, "MLP", "proj(act(fc(x))), act GELU or SwiGLU; hidden 0: 4 dim (GELU), 8/3 dim (SwiGLU).")
      .def(pyb::init([](int64_t dim, int64_t hidden, const std::string& activation, bool bias) {
             check(activation == "gelu" || activation == "swiglu", "MLP: activation '", activation, "'; known: gelu, swiglu");
             return std::make_shared<nn::MLP<float>>(nn::MlpOptions{
                 .dim = dim, .hidden = hidden,
                 .activation = activation == "gelu" ? nn::MlpActivation::kGelu : nn::MlpActivation::kSwiGLU, .bias = bias});
           }),
           pyb::arg("dim"), pyb::arg("hidden") = 0, pyb::arg("activation") = "gelu", pyb::arg("bias") = true);
  unary<nn::Dropout<float>>(m, "Dropout", "Zeroes each element with probability p in training (masks from the tape's seed).")
      .def(pyb::init([](double p) { return std::make_shared<nn::Dropout<float>>(p); }), pyb::arg("p") = 0.5);
  unary<nn::ReLU<float>>(m, "ReLU", "max(x, 0)").def(pyb::init<>());
  unary<nn::GELU<float>>(m, "GELU", "x Phi(x), tanh approximation").def(pyb::init<>());
  unary<nn::SiLU<float>>(m, "SiLU", "x sigmoid(x)").def(pyb::init<>());
  unary<nn::Tanh<float>>(m, "Tanh", "tanh(x)").def(pyb::init<>());
  unary<nn::Sigmoid<float>>(m, "Sigmoid", "1 / (1 + exp(-x))").def(pyb::init<>());

  pyb::class_<nn::Embedding<float>, M, std::shared_ptr<nn::Embedding<float>>>(m, "Embedding", "Rows of a (num, dim) table by id.")
      .def(pyb::init([](int64_t num, int64_t dim, double init_std) {
             return std::make_shared<nn::Embedding<float>>(nn::EmbeddingOptions{.num = num, .dim = dim, .init_std = init_std});
           }),
           pyb::arg("num_embeddings"), pyb::arg("dim"), pyb::arg("init_std") = 1.0)
      .def("__call__", [](pyb::object self, std::shared_ptr<PyTape<float>> tape, const ArrayLike& ids_like) {
        check(static_cast<bool>(tape), "Embedding: tape is None");
        const pyb::array& ids = ids_like.array;
        std::vector<int64_t> dims(ids.shape(), ids.shape() + ids.ndim());
        const Shape shape = shape_of(dims, "Embedding ids");
        const auto span = tape_ids(*tape, ids, "Embedding ids");
        Var<float> y = self.cast<nn::Embedding<float>&>().forward(tape->get(), span, shape);
        tape->keep.push_back(self);
        return PV{tape, y};
      }, pyb::arg("tape"), pyb::arg("ids"), "emb(tape, ids): ids an integer array (B, T) -> Var (B, T, dim).");

  bind_functional_norms<float>(m);
  bind_functional_norms<double>(m);
  m.def("hooks_per_worker", &nn::set_hooks_per_worker, pyb::arg("enabled"),
        "True: a hook runs once per worker thread with its slice of the batch (the default, False: once per\n"
        "module call with the whole batch, on the calling thread, as torch's).");
  m.def("norm_names", &nn::norm_names, "Every registered norm's name (the --norm values).");
  m.def(
      "norm",
      [](const std::string& name, int64_t dim, double eps, bool bias) {
        nn::NormSpec spec;
        spec.dim = dim;
        spec.eps = eps;
        spec.bias = bias;
        return std::shared_ptr<U>(nn::make_norm<float>(nn::NormKind::parse(name), spec));
      },
      pyb::arg("name"), pyb::arg("dim"), pyb::arg("eps") = 1e-5, pyb::arg("bias") = true,
      "A registered norm by name (nn.norm_names()), as the decoder builds it.");
}

}  // namespace tapegrad::py
