// tapegrad.lm: TrainConfig from keyword arguments (the settings table's names, '-' written '_'),
// the Trainer (train_step, evaluate, fit, checkpoints, generate) and the decoder as a module.
//   config = TrainConfig(norm="rmsnorm", dim=64, steps=200, lr=3e-3)
//   trainer = Trainer(config)            # the embedded corpus, or text="...", or config.data
//   trainer.fit(progress=True); trainer.save("runs/py"); print(trainer.generate("The ", 80))
#include <chrono>
#include <cmath>
#include <mutex>

#include "bind.h"
#include "tapegrad/io/file.h"
#include "tapegrad/lm/checkpoint.h"
#include "tapegrad/lm/usage_error.h"
#include "tapegrad/lm/recipes.h"
#include "tapegrad/lm/run.h"
#include "tapegrad/lm/run_lock.h"
#include "tapegrad/lm/sampling.h"
#include "tapegrad/lm/settings.h"
#include "tapegrad/lm/step_record.h"
#include "tapegrad/lm/trainer.h"
#include "tapegrad/nn/decoder.h"
#include "tapegrad/random.h"

namespace tapegrad::py {

namespace {

using nlohmann::json;
using lm::TrainConfig;

pyb::object to_python(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return pyb::none();
    case json::value_t::boolean: return pyb::bool_(j.get<bool>());
    case json::value_t::number_integer: return pyb::int_(j.get<int64_t>());
    case json::value_t::number_unsigned: return pyb::int_(j.get<uint64_t>());
    case json::value_t::number_float: return pyb::float_(j.get<double>());
    case json::value_t::string: return pyb::str(j.get<std::string>());
    case json::value_t::array: {
      pyb::list l;
      for (const auto& x : j) l.append(to_python(x));
      return l;
    }
    case json::value_t::object: {
      pyb::dict d;
      for (const auto& [k, v] : j.items()) d[pyb::str(k)] = to_python(v);
      return d;
    }
    default: return pyb::none();
  }
}

}  // namespace

json setting_value_of(pyb::handle h, const std::string& what) {
  if (h.is_none()) return nullptr;
  // numpy's values as Python's: an array is a list (np.logspace(-4, -2, 7) as an axis), a numpy
  // bool, integer or float scalar the Python value it stands for.
  if (pyb::isinstance<pyb::array>(h) && pyb::reinterpret_borrow<pyb::array>(h).ndim() == 0)
    return setting_value_of(h[pyb::tuple()], what);  // its numpy scalar; a larger array is a list below
  static const pyb::handle numpy_bool = pyb::object(pyb::module_::import("numpy").attr("bool_")).release();
  if (PyBool_Check(h.ptr()) || pyb::isinstance(h, numpy_bool)) return PyObject_IsTrue(h.ptr()) == 1;
  if (pyb::isinstance<pyb::str>(h)) return h.cast<std::string>();
  // numbers.Integral, not __index__: numpy's float scalars have an __index__ that refuses.
  static const pyb::handle integral = pyb::object(pyb::module_::import("numbers").attr("Integral")).release();
  if (pyb::isinstance(h, integral)) {
    const pyb::object i = pyb::reinterpret_steal<pyb::object>(PyNumber_Index(h.ptr()));
    if (!i) throw pyb::error_already_set();
    // Signed where it fits, else unsigned (a seed of 2^64 - 1): the setting's reader takes either.
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
    if (overflow == 0) return static_cast<int64_t>(v);
    if (overflow > 0) {
      const unsigned long long u = PyLong_AsUnsignedLongLong(i.ptr());
      if (!PyErr_Occurred()) return static_cast<uint64_t>(u);
      PyErr_Clear();
    }
    throw Error(cat(what, ": ", std::string(pyb::str(i)), " does not fit in 64 bits"));
  }
  static const pyb::handle real = pyb::object(pyb::module_::import("numbers").attr("Real")).release();
  if (pyb::isinstance(h, real)) {  // float, np.float32, Fraction
    // A narrower numpy float stands for the decimal it prints as (np.float32(1e-3) is the user's
    // 0.001, not 0.0010000000474974513 in every run name and record).
    const bool narrow = !PyFloat_Check(h.ptr()) && pyb::str(pyb::type::handle_of(h).attr("__module__")).cast<std::string>() == "numpy";
    const pyb::object f = narrow ? pyb::reinterpret_steal<pyb::object>(PyFloat_FromString(pyb::str(h).ptr()))
                                 : pyb::reinterpret_borrow<pyb::object>(h);
    if (!f) throw pyb::error_already_set();
    const double v = PyFloat_AsDouble(f.ptr());
    if (v == -1.0 && PyErr_Occurred()) throw pyb::error_already_set();
    return v;
  }
  if (sized_sequence(h)) {  // a list, a tuple, a range
    json a = json::array();
    const pyb::sequence seq = pyb::reinterpret_borrow<pyb::sequence>(h);
    for (size_t k = 0; k < seq.size(); ++k) a.push_back(setting_value_of(seq[k], what));
    return a;
  }
  throw Error(cat(what, ": a ", type_name_of(h), " is not a setting value (numbers, text, True/False, or a list of them)"));
}

std::string setting_key(std::string name) {
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

namespace {

const lm::Setting& setting_named(const std::string& name) {
  const lm::Setting* s = lm::find_setting(setting_key(name));
  if (!s) {
    std::string known;
    for (const auto& x : lm::settings()) {
      std::string k = x.key;
      std::replace(k.begin(), k.end(), '-', '_');
      known += (known.empty() ? "" : ", ") + k;
    }
    throw lm::SettingError(cat("TrainConfig: no setting '", name, "'; known: ", known));
  }
  return *s;
}

// The keys (flag names) of the keywords, the settings a user gave.
std::set<std::string> given_keys(const pyb::dict& kwargs) {
  std::set<std::string> given;
  for (auto [k, v] : kwargs) given.insert(setting_named(pyb::str(k)).key);
  return given;
}

// The settings table's warnings for `c`, as Python warnings (tapegrad.SettingWarning).
void warn_settings(const TrainConfig& c) {
  static const pyb::object category = pyb::module_::import("tapegrad._tapegrad").attr("SettingWarning");
  for (const std::string& w : c.warnings())
    if (PyErr_WarnEx(category.ptr(), lm::render_settings(w, "").c_str(), 2) != 0) throw pyb::error_already_set();
}

void set_from_kwargs(TrainConfig& c, const pyb::dict& kwargs) {
  for (auto [k, v] : kwargs) {
    const std::string name = pyb::str(k);
    const lm::Setting& s = setting_named(name);
    try {
      lm::set_setting(s, c, setting_value_of(v, "TrainConfig " + name));
    } catch (const lm::UsageError&) {
      throw;
    } catch (const Error& e) {  // a value the setting does not take: a SettingError (ValueError) too
      throw lm::SettingError(e.what());
    }
  }
}

// A trainer and what its run needs beyond it: the text it was given (to resume on it). Its calls
// run without the GIL, so two Python threads could reach one lm::Trainer at once (train_step
// beside generate): every call holds `busy` for its length. Taken with the GIL released (a call
// waiting for it never blocks the thread that holds it from calling back into Python), and
// recursive: fit's on_step may read the trainer it is called from.
struct PyTrainer {
  std::unique_ptr<lm::Trainer> trainer;
  std::optional<std::string> text;
  std::unique_ptr<std::recursive_mutex> busy = std::make_unique<std::recursive_mutex>();
};

// One call's hold on a PyTrainer. Construct it with the GIL held (it releases the GIL to wait)
// or, with `gil_released`, inside a call that already released it.
class TrainerCall {
 public:
  explicit TrainerCall(PyTrainer& p, bool gil_released = false) : lock_(*p.busy, std::defer_lock) {
    check(p.trainer != nullptr, "Trainer: not constructed");
    if (!lock_.try_lock()) {
      if (gil_released) {
        lock_.lock();
      } else {
        pyb::gil_scoped_release release;
        lock_.lock();
      }
    }
  }

 private:
  std::unique_lock<std::recursive_mutex> lock_;
};

// A step's record (lm/step_record.h), as train_lm's metrics.jsonl writes it: StepResult.to_dict()
// and fit's on_step dicts.
pyb::dict result_dict(const lm::StepResult& r) { return to_python(lm::step_record(r)).cast<pyb::dict>(); }
pyb::dict step_dict(const lm::StepReport& r) { return to_python(lm::step_record(r)).cast<pyb::dict>(); }

}  // namespace

void bind_lm(pyb::module_& top) {
  pyb::module_ m = top.def_submodule("lm", "The training layer: TrainConfig, Trainer, checkpoints, sampling.");

  pyb::class_<TrainConfig>(m, "TrainConfig", pyb::dynamic_attr(),
                           "Every training setting (the settings table: docs/training.md), set by keyword:\n"
                           "TrainConfig(norm='rmsnorm', dim=64, lr=3e-3). Names are the flags' with '_' for '-'.")
      .def(pyb::init([](pyb::kwargs kwargs) {
        TrainConfig c;
        set_from_kwargs(c, kwargs);
        c = lm::configure(c, given_keys(kwargs));  // as train_lm: the recipe applied, keywords given win
        warn_settings(c);
        return c;
      }))
      .def("__getattr__", [](const TrainConfig& c, const std::string& name) {
        const lm::Setting* s = lm::find_setting(setting_key(name));
        if (!s) throw pyb::attribute_error(cat("TrainConfig has no setting '", name, "'"));
        return to_python(lm::setting_json(*s, c));
      })
      .def("__setattr__", [](pyb::object self, const std::string& name, pyb::object v) {
        // A Trainer's config is a copy of the run's settings, marked read-only: assigning to it
        // would change nothing the run does, so it is refused instead of ignored.
        const pyb::dict attrs = self.attr("__dict__");
        if (attrs.contains("_read_only"))
          throw pyb::attribute_error(cat("TrainConfig: this is ", std::string(pyb::str(attrs["_read_only"])),
                                         ", read-only: assigning ", name, " would change nothing. Make a new config "
                                         "(config.replace(", name, "=...)) and a new Trainer"));
        TrainConfig& c = self.cast<TrainConfig&>();
        lm::set_setting(setting_named(name), c, setting_value_of(v, "TrainConfig " + name));
        warn_settings(c);
      })
      .def("replace", [](const TrainConfig& c, pyb::kwargs kwargs) {
        TrainConfig copy = c;
        set_from_kwargs(copy, kwargs);
        copy = lm::configure(copy, given_keys(kwargs));
        warn_settings(copy);
        return copy;
      }, "A copy with the given settings changed (and the recipe applied to the others, as TrainConfig(...)).")
      .def("validate", &TrainConfig::validate, "Checks every setting's range and the combinations (train_lm's rules).")
      .def("to_dict", [](const TrainConfig& c) {
        pyb::dict d;
        for (const auto& s : lm::settings()) {
          std::string k = s.key;
          std::replace(k.begin(), k.end(), '-', '_');
          d[pyb::str(k)] = to_python(lm::setting_json(s, c));
        }
        return d;
      })
      .def_static("settings", [] {
        std::vector<std::string> names;
        for (const auto& s : lm::settings()) {
          names.push_back(s.key);
          std::replace(names.back().begin(), names.back().end(), '-', '_');
        }
        return names;
      })
      .def("__repr__", [](const TrainConfig& c) {
        std::string out = "TrainConfig(";
        const TrainConfig defaults;
        bool first = true;
        for (const auto& s : lm::settings()) {
          const json v = lm::setting_json(s, c);
          if (v == lm::setting_json(s, defaults)) continue;
          std::string k = s.key;
          std::replace(k.begin(), k.end(), '-', '_');
          out += (first ? "" : ", ") + k + "=" + v.dump();
          first = false;
        }
        return out + ")";
      });

  pyb::class_<lm::StepResult>(m, "StepResult")
      .def_readonly("step", &lm::StepResult::step)
      .def_readonly("loss", &lm::StepResult::loss)
      .def_readonly("z_loss", &lm::StepResult::z_loss)
      .def_readonly("log_z_mean", &lm::StepResult::log_z_mean)
      .def_readonly("log_z_min", &lm::StepResult::log_z_min)
      .def_readonly("lr", &lm::StepResult::lr)
      .def_readonly("grad_norm", &lm::StepResult::grad_norm)
      .def_readonly("step_ms", &lm::StepResult::step_ms)
      .def_readonly("tokens_per_s", &lm::StepResult::tokens_per_s)
      .def_readonly("finite", &lm::StepResult::finite)
      .def("to_dict", &result_dict, "Every field, as fit's on_step dicts hold them.")
      .def("__repr__", [](const lm::StepResult& r) {
        return cat("StepResult(step=", r.step, ", loss=", r.loss, ", lr=", r.lr, ", grad_norm=", r.grad_norm, ")");
      });
  pyb::class_<lm::EvalResult>(m, "EvalResult")
      .def_readonly("val_loss", &lm::EvalResult::val_loss)
      .def_readonly("train_loss", &lm::EvalResult::train_loss)
      .def("__repr__", [](const lm::EvalResult& r) { return cat("EvalResult(val_loss=", r.val_loss, ", train_loss=", r.train_loss, ")"); });

  m.def("vocab_size", [](const TrainConfig& config, std::optional<std::string> text) {
        config.validate();
        const std::string t = text ? *text : lm::load_text(config.data);
        return lm::build_tokenizer(config, t, text ? "the text given" : config.data.empty() ? "the embedded corpus" : config.data)
            ->vocab_size();
      }, pyb::arg("config"), pyb::arg("text") = pyb::none(),
      "The vocabulary a Trainer of this config (and text) will have: what a model of your own is built for.");
  using LM = nn::LanguageModel<float>;
  pyb::class_<LM, nn::Module<float>, std::shared_ptr<LM>>(m, "LanguageModel")
      .def("__call__", [](pyb::object self, std::shared_ptr<PyTape<float>> tape, const ArrayLike& ids_like,
                          std::optional<ArrayLike> targets_like) {
        check(static_cast<bool>(tape), "LanguageModel: tape is None");
        const pyb::array& ids = ids_like.array;
        const pyb::array* targets = targets_like ? &targets_like->array : nullptr;
        check(ids.ndim() == 2, "LanguageModel: ids must be (B, T), got ", ids.ndim(), " dimensions");
        const int64_t B = ids.shape(0), T = ids.shape(1);
        const auto span = tape_ids(*tape, ids, "LanguageModel ids");
        std::span<const int32_t> tspan;
        if (targets) {
          check(targets->size() == ids.size(), "LanguageModel: ", targets->size(), " targets for ", ids.size(), " ids");
          tspan = tape_ids(*tape, *targets, "LanguageModel targets");
        }
        const RecordingOn recording(tape);  // for the hooks
        auto out = self.cast<LM&>().forward(tape->get(), span, B, T, tspan);
        tape->keep.push_back(self);
        pyb::object loss = out.loss.defined() ? pyb::cast(PyVar<float>{tape, out.loss}) : pyb::none();
        return pyb::make_tuple(PyVar<float>{tape, out.logits}, loss);
      }, pyb::arg("tape"), pyb::arg("ids"), pyb::arg("targets") = pyb::none(),
      "model(tape, ids (B, T), targets=None) -> (logits (B, T, V), loss or None)")
      .def_property_readonly("ctx", &LM::ctx);
  pyb::class_<nn::Decoder<float>, LM, std::shared_ptr<nn::Decoder<float>>>(m, "Decoder")
      .def(pyb::init([](const TrainConfig& c, int64_t vocab, uint64_t seed) {
             c.validate();
             return std::make_shared<nn::Decoder<float>>(c.model_for(vocab), seed);
           }),
           pyb::arg("config"), pyb::arg("vocab"), pyb::arg("seed") = 1,
           "The pre-norm decoder the config's model settings describe (dim, layers, heads, norm, ...).");

  pyb::class_<PyTrainer>(m, "Trainer", "One training run, a step at a time (lm::Trainer).")
      .def(pyb::init([](const TrainConfig& config, std::optional<std::string> text, pyb::object model) {
             config.validate();
             PyTrainer p;
             const std::string t = text ? *text : lm::load_text(config.data);
             auto tokenizer = lm::build_tokenizer(config, t, text ? "the text given" : config.data.empty() ? "the embedded corpus" : config.data);
             auto data = lm::make_token_data(config, *tokenizer, t);
             if (model.is_none()) {
               p.trainer = std::make_unique<lm::Trainer>(config, tokenizer, data);
             } else {
               // A built-in model (tg.lm.Decoder) is what the Trainer builds itself from the config:
               // said so, rather than refused as not being a tapegrad.nn.Module.
               check(!pyb::isinstance<LM>(model), "Trainer model: a ", type_name_of(model),
                     " is built by the Trainer itself from the config's model settings (TrainConfig(dim=..., norm=...)): "
                     "leave model out, and read the trained one as trainer.model");
               // The vocabulary is the tokenizer's; the model's, if it states one, must match it.
               const int64_t vocab = tokenizer->vocab_size();
               // Optional int attributes of the model: its vocabulary (must match) and longest sequence.
               const auto int_attr = [&](const char* name, int64_t otherwise) {
                 if (!pyb::hasattr(model, name)) return otherwise;
                 const pyb::object v = model.attr(name);
                 check(pyb::isinstance<pyb::int_>(v) && !pyb::isinstance<pyb::bool_>(v), "Trainer model: its ", name,
                       " is a ", type_name_of(v), "; it must be an int");
                 const json j = setting_value_of(v, cat("Trainer model: its ", name));  // an Error past 64 bits
                 check(!j.is_number_unsigned(), "Trainer model: its ", name, " ", j.dump(), " is too large");
                 const int64_t n = j.get<int64_t>();
                 check(n > 0, "Trainer model: its ", name, " is ", n, "; it must be positive");
                 return n;
               };
               check(int_attr("vocab_size", vocab) == vocab, "Trainer model: its vocab_size ", int_attr("vocab_size", vocab),
                     " is not the tokenizer's ", vocab, " (build it with tg.lm.vocab_size(config))");
               // The longest sequence it takes: ctx, the name the settings use ("context" before).
               const int64_t ctx = int_attr(pyb::hasattr(model, "ctx") ? "ctx" : "context", config.model.ctx);
               p.trainer = std::make_unique<lm::Trainer>(config, python_language_model(model, vocab, ctx), tokenizer, data);
             }
             p.text = text;
             return p;
           }),
           pyb::arg("config"), pyb::arg("text") = pyb::none(), pyb::arg("model") = pyb::none(),
           "Trainer(config, text=None, model=None). model: a tapegrad.nn.Module of your own with forward(tape, ids)\n"
           "-> logits (B, T, vocab) (trained with the config's training settings; its model settings are unused).")
      .def_static("resume", [](const std::string& dir, std::optional<int64_t> steps, std::optional<std::string> text,
                               bool allow_data_change) {
        lm::ResumeOverrides o;
        o.steps = steps;
        o.text = text;
        o.allow_data_change = allow_data_change;
        PyTrainer p;
        p.trainer = lm::resume_trainer(dir, o);
        p.text = text;
        return p;
      }, pyb::arg("dir"), pyb::arg("steps") = pyb::none(), pyb::arg("text") = pyb::none(),
         pyb::arg("allow_data_change") = false,
         "The run saved in dir, continuing exactly where it stopped (pass text= if it trained on a string).")
      .def("train_step", [](PyTrainer& p) { TrainerCall use(p, true); return p.trainer->train_step(); },
           pyb::call_guard<pyb::gil_scoped_release>())
      .def("evaluate", [](PyTrainer& p, bool hooks) { TrainerCall use(p, true); return p.trainer->evaluate(hooks); },
           pyb::arg("hooks") = false, pyb::call_guard<pyb::gil_scoped_release>(),
           "Mean loss over eval_iters batches of each split; module hooks run only with hooks=True.")
      .def("save", [](PyTrainer& p, const std::string& dir) {
             io::check_path(dir, "Trainer.save dir");
             TrainerCall use(p, true);
             lm::save_checkpoint(*p.trainer, dir);
           }, pyb::arg("dir"),
           pyb::call_guard<pyb::gil_scoped_release>(), "A crash-safe checkpoint in dir (model, optimizer, data position).")
      .def(
          "fit",
          [](PyTrainer& p, std::optional<int64_t> until, pyb::object on_step, bool progress, std::optional<std::string> checkpoint_dir) {
            if (checkpoint_dir) io::check_path(*checkpoint_dir, "Trainer.fit checkpoint_dir");
            if (!on_step.is_none() && !PyCallable_Check(on_step.ptr()))  // before a step trains, not after
              throw pyb::type_error(cat("Trainer.fit: on_step must be callable (it gets a dict per step), got ",
                                        type_name_of(on_step)));
            TrainerCall use(p);
            std::optional<lm::RunLock> folder;  // the run's folder is this run's, as train_lm's --out
            if (checkpoint_dir) folder.emplace(*checkpoint_dir);
            lm::RunHooks hooks;
            bool interrupted = false;
            hooks.stop_after = until.value_or(0);
            // The progress line (tapegrad/progress.py): in place in a terminal or a notebook, a line
            // per evaluation elsewhere.
            pyb::object bar = progress ? pyb::module_::import("tapegrad.progress")
                                             .attr("Progress")(until.value_or(p.trainer->config().steps))
                                       : pyb::none();
            hooks.on_step = [&](const lm::StepReport& r) {
              pyb::gil_scoped_acquire gil;
              if (on_step.is_none() && bar.is_none()) return;
              const pyb::dict d = step_dict(r);
              if (!on_step.is_none()) on_step(d);
              if (!bar.is_none()) bar.attr("update")(d);
            };
            if (checkpoint_dir)
              hooks.on_checkpoint = [&](int64_t) { lm::save_checkpoint(*p.trainer, *checkpoint_dir); };
            hooks.stop_requested = [&] {
              pyb::gil_scoped_acquire gil;
              interrupted = interrupted || PyErr_CheckSignals() != 0;  // Ctrl-C: stop after this step
              return interrupted;
            };
            lm::RunOutcome outcome;
            {
              pyb::gil_scoped_release release;
              outcome = lm::run(*p.trainer, hooks);
            }
            if (interrupted) throw pyb::error_already_set();
            pyb::dict d;
            d["end"] = outcome.end == lm::RunEnd::kFinished ? "finished"
                       : outcome.end == lm::RunEnd::kDiverged ? "diverged"
                       : outcome.end == lm::RunEnd::kStoppedAfter ? "stopped"
                                                                  : "interrupted";
            d["step"] = outcome.step;
            if (outcome.divergence) d["divergence"] = outcome.divergence->detail;
            return d;
          },
          pyb::arg("until") = pyb::none(), pyb::arg("on_step") = pyb::none(), pyb::arg("progress") = true,
          pyb::arg("checkpoint_dir") = pyb::none(),
          "Trains to config.steps (or step `until`), evaluating every eval_every steps; on_step(dict) sees each step.\n"
          "progress draws a line that updates in place in a terminal or a notebook (a line per evaluation\n"
          "when stdout is a file), tokens/s averaged over the last 20 steps. With checkpoint_dir,\n"
          "saves every checkpoint_every steps and at the end. Returns {'end', 'step'[, 'divergence']}.")
      .def(
          "generate",
          [](PyTrainer& p, const std::string& prompt, int64_t tokens, double temperature, int64_t top_k, double top_p, uint64_t seed) {
            check(tokens >= 0 && tokens <= (int64_t{1} << 24), "generate: tokens must be in [0, 2^24], got ", tokens);
            lm::SamplingOptions o;
            o.temperature = temperature;
            o.top_k = top_k;
            o.top_p = top_p;
            check_finite(temperature, Bound::kNonNegative, "generate: temperature");
            check(top_k >= 0, "generate: top_k must be >= 0, got ", top_k);
            check(top_p > 0 && top_p <= 1, "generate: top_p must be in (0, 1], got ", top_p);
            Rng rng(seed);
            TrainerCall use(p);
            pyb::gil_scoped_release release;
            const auto ids = lm::generate(p.trainer->model(), p.trainer->tokenizer(), prompt, tokens, o, rng);
            return p.trainer->tokenizer().decode(ids);
          },
          pyb::arg("prompt"), pyb::arg("tokens") = 100, pyb::arg("temperature") = 1.0, pyb::arg("top_k") = 0,
          pyb::arg("top_p") = 1.0, pyb::arg("seed") = 0, "The prompt's continuation, sampled from the model.")
      .def("encode", [](PyTrainer& p, const std::string& text) { TrainerCall use(p); return p.trainer->tokenizer().encode(text); })
      .def("decode", [](PyTrainer& p, const std::vector<int32_t>& ids) { TrainerCall use(p); return p.trainer->tokenizer().decode(ids); })
      .def_property_readonly("step", [](PyTrainer& p) { TrainerCall use(p); return p.trainer->step(); })
      .def_property_readonly("lr", [](PyTrainer& p) { TrainerCall use(p); return p.trainer->lr(); }, "The rate the next step uses.")
      .def_property_readonly("config", [](PyTrainer& p) {
        TrainerCall use(p);
        pyb::object copy = pyb::cast(p.trainer->config());
        copy.attr("__dict__")["_read_only"] = "a copy of a Trainer's settings";
        return copy;
      }, "The run's settings: a read-only copy (config.replace(...) makes a new one).")
      .def_property_readonly("vocab_size", [](PyTrainer& p) { TrainerCall use(p); return p.trainer->tokenizer().vocab_size(); })
      .def_property_readonly("model", [](PyTrainer& p) { return &p.trainer->model(); }, pyb::return_value_policy::reference_internal)
      .def("__repr__", [](PyTrainer& p) {
        TrainerCall use(p);
        const lm::TrainConfig& c = p.trainer->config();
        return cat("Trainer(step ", p.trainer->step(), " of ", c.steps, ", ", p.trainer->model().type_name(), " ",
                   p.trainer->model().num_parameters(), " parameters, norm=", c.model.norm.name(), ", lr ", p.trainer->lr(),
                   " now, ", c.optimizer, ", vocab ", p.trainer->tokenizer().vocab_size(), ")");
      });
}

}  // namespace tapegrad::py
