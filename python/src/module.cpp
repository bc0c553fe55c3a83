// The extension module tapegrad._tapegrad; the package tapegrad (python/tapegrad) re-exports it.
#include "bind.h"
#include "tapegrad/isa.h"
#include "tapegrad/threads.h"

PYBIND11_MODULE(_tapegrad, m) {
  m.doc() = "tapegrad's C++ engine: tensors, the tape, modules, optimizers, the trainer and the lab";
  using namespace tapegrad::py;
  bind_tensor(m);
  bind_autograd(m);
  bind_nn(m);
  {
    auto nn_module = m.attr("_nn").cast<pybind11::module_>();
    bind_hooks(nn_module);
    bind_plugin(nn_module);
  }
  bind_function(m);
  bind_optim(m);
  bind_lm(m);
  bind_lab(m);
  m.def("set_num_threads", &tapegrad::set_num_threads, pybind11::arg("n"),
        "Threads for the engine's parallel loops and GEMM (one per core by default).");
  m.def("num_threads", &tapegrad::num_threads);
  m.def("kernel_variant", [] { return std::string(tapegrad::isa_name(tapegrad::active_isa())); },
        "The instruction-set variant the hand kernels run (TAPEGRAD_ISA forces one).");
}
