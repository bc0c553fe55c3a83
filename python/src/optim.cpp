// tapegrad.optim: every registered update rule (AdamW and SGD by torch's names) over a list of parameters, learning-rate schedules from the
// registry, gradient clipping. As in torch, an optimizer holds its learning rate (opt.lr, which a
// schedule may set each step) and step() takes no argument; the C++ optimizers take the rate per
// step, so the wrapper carries it.
#include <mutex>

#include "bind.h"
#include "tapegrad/optim/clip.h"
#include "tapegrad/optim/registry.h"
#include "tapegrad/optim/schedule.h"
#include "tapegrad/parameter.h"

namespace tapegrad::py {

namespace {

using ParamF = Parameter<float>;

struct PyOptimizer {
  std::unique_ptr<Optimizer<float>> opt;
  double lr = 1e-3;
  pyb::list params;  // keeps the parameters (and so their modules) alive
  std::string name;  // "AdamW", "SGD": for repr
  // step() runs without the GIL: two threads stepping one optimizer take turns, each step whole.
  std::unique_ptr<std::mutex> busy = std::make_unique<std::mutex>();
};

// The parameters of a list (or any iterable) of tapegrad.Parameter, kept alive by `keep`.
std::vector<ParamF*> parameters_of(const pyb::iterable& params, pyb::list& keep, const char* who) {
  std::vector<ParamF*> out;
  for (pyb::handle h : params) {
    check(pyb::isinstance<ParamF>(h), who, ": expected tapegrad.Parameter objects, got ",
          type_name_of(h));
    out.push_back(&h.cast<ParamF&>());
    keep.append(h);
  }
  check(!out.empty(), who, ": no parameters to optimize");
  return out;
}

void check_lr(double lr, const std::string& who) {
  check_finite(lr, Bound::kNonNegative, who, ": lr");
}

// The rule registered as `name` (optim/registry.h) over `params`, shown as `shown`.
PyOptimizer registered(const std::string& name, const std::string& shown, const pyb::iterable& params, double lr,
                       const OptimizerSettings& settings) {
  check_lr(lr, shown);
  PyOptimizer o;
  o.lr = lr, o.name = shown;
  o.opt = make_optimizer(name, parameters_of(params, o.params, shown.c_str()), settings);
  return o;
}

}  // namespace

void bind_optim(pyb::module_& top) {
  pyb::module_ m = top.def_submodule("optim", "Optimizers, schedules and gradient clipping.");

  pyb::class_<PyOptimizer>(m, "Optimizer")
      .def_readwrite("lr", &PyOptimizer::lr, "The rate the next step() uses (a schedule sets it).")
      .def("step", [](PyOptimizer& o, std::optional<double> lr) {
        const double rate = lr.value_or(o.lr);
        check_lr(rate, "Optimizer.step");
        pyb::gil_scoped_release release;
        const std::lock_guard<std::mutex> turn(*o.busy);
        o.opt->step(rate);
      }, pyb::arg("lr") = pyb::none())
      .def("zero_grad", [](PyOptimizer& o) {
        pyb::gil_scoped_release release;
        const std::lock_guard<std::mutex> turn(*o.busy);
        o.opt->zero_grad();
      })
      .def_property_readonly("params", [](const PyOptimizer& o) { return o.params; })
      .def("__repr__", [](const PyOptimizer& o) {
        return cat(o.name, "(", pyb::len(o.params), " parameters, lr=", o.lr, ", ", o.opt->steps(), " steps taken)");
      });

  // torch's names for the registered rules: the same path as optimizer(name, ...).
  m.def(
      "AdamW",
      [](const pyb::iterable& params, double lr, std::pair<double, double> betas, double eps, double weight_decay) {
        return registered("adamw", "AdamW", params, lr, {.beta1 = betas.first, .beta2 = betas.second, .eps = eps,
                                                          .weight_decay = {.rate = weight_decay}});
      },
      pyb::arg("params"), pyb::arg("lr") = 1e-3, pyb::arg("betas") = std::pair<double, double>{0.9, 0.999},
      pyb::arg("eps") = 1e-8, pyb::arg("weight_decay") = 0.01,
      "torch.optim.AdamW's update; weight decay on matrices only (biases and norm gains are not decayed).");
  m.def(
      "SGD",
      [](const pyb::iterable& params, double lr, double momentum, double weight_decay) {
        return registered("sgd", "SGD", params, lr, {.momentum = momentum, .weight_decay = {.rate = weight_decay}});
      },
      pyb::arg("params"), pyb::arg("lr") = 1e-2, pyb::arg("momentum") = 0.9, pyb::arg("weight_decay") = 0.0);
  m.def("optimizer_names", [] { return optimizer_registry().names(); },
        "Every registered update rule (the --optimizer values), a program's own included.");
  m.def(
      "optimizer",
      [](const std::string& name, const pyb::iterable& params, double lr, std::pair<double, double> betas, double eps,
         double momentum, double weight_decay) {
        return registered(name, name, params, lr, {.beta1 = betas.first, .beta2 = betas.second, .eps = eps,
                                                     .momentum = momentum, .weight_decay = {.rate = weight_decay}});
      },
      pyb::arg("name"), pyb::arg("params"), pyb::arg("lr") = 1e-3, pyb::arg("betas") = std::pair<double, double>{0.9, 0.999},
      pyb::arg("eps") = 1e-8, pyb::arg("momentum") = 0.9, pyb::arg("weight_decay") = 0.0,
      "The update rule registered as `name` (optimizer_names(); a rule a program registers in C++ with\n"
      "optimizer_registry().add appears here with no binding code), each reading the settings it uses.");
  m.def(
      "clip_grad_norm",
      [](const pyb::iterable& params, double max_norm) {
        pyb::list keep;
        return clip_grad_norm<float>(parameters_of(params, keep, "clip_grad_norm"), max_norm);
      },
      pyb::arg("params"), pyb::arg("max_norm"), "Scales the gradients to a global norm <= max_norm; returns the norm before.");

  pyb::class_<Schedule, std::shared_ptr<Schedule>>(m, "Schedule", "A learning rate per step: schedule(step) (from 0).")
      .def("__call__", &Schedule::at, pyb::arg("step"));
  m.def("schedule_names", [] { return schedule_registry().names(); });
  m.def(
      "schedule",
      [](const std::string& name, double lr, double min_lr, int64_t warmup, int64_t total) {
        return std::shared_ptr<Schedule>(make_schedule(name, ScheduleShape{.lr = lr, .min_lr = min_lr, .warmup = warmup, .total = total}));
      },
      pyb::arg("name"), pyb::arg("lr"), pyb::arg("min_lr") = 0.0, pyb::arg("warmup") = 0, pyb::arg("total"),
      "A registered schedule (schedule_names()): warmup to lr, then its shape down to min_lr at step total.");
}

}  // namespace tapegrad::py
