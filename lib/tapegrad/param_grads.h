// ParamGrads: gradient buffers for a set of parameters, for a tape that must not simply add into
// the parameters' own .grad() — a data-parallel worker computing its share of a batch beside
// others (lm/batch_parallel.h). With tape.set_param_grads(&g), tape.param(p) accumulates p's
// gradient into g's buffer for p; add_into_params() then sums the buffers into the parameters.
//
// zero() is lazy: it marks every buffer "unwritten" instead of filling it, and the tape lets the
// first op that reaches a parameter in backward write its gradient instead of adding to zeros —
// a weight gradient's GEMM then runs with beta = 0, and no pass over the buffers fills or re-reads
// zeros (bench/RESULTS.md: 3-4 % of a 2-thread step at C128 and C256). Every read through this
// class sees zeros in a buffer no op wrote.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tapegrad/parameter.h"

namespace tapegrad {

template <typename T>
class ParamGrads {
 public:
  // Where the buffers are: private ones (a worker's share), or the parameters' own .grad() (the
  // first worker's, which then writes the parameters' gradients directly).
  enum class Storage { kPrivate, kParameters };

  ParamGrads() = default;
  explicit ParamGrads(std::span<Parameter<T>* const> params, Storage storage = Storage::kPrivate);

  // The buffer for p (shape of p), zeros if unwritten since zero(). Throws, naming p, if p is not
  // one of this set's parameters.
  TensorView<T> grad_for(const Parameter<T>& p);
  // The same without filling: the buffer and its "unwritten" flag (the tape's view: it passes the
  // flag to the op that reaches p first, and clears it).
  struct Lazy {
    TensorView<T> grad;
    bool* unwritten;
  };
  Lazy lazy_grad_for(const Parameter<T>& p);
  // Every buffer to zero, lazily (see above).
  void zero();
  // Fills the buffers still unwritten with zeros: after a backward pass that did not reach every
  // parameter, before anything reads the buffers other than through this class.
  void fill_unwritten();
  // p.grad() += this set's gradient of p, for every p written since zero(); threads split the
  // elements, in a fixed way. (A private set only.)
  void add_into_params();

 private:
  struct Entry {
    Parameter<T>* param;
    Tensor<T> buffer;         // kPrivate; empty for kParameters
    T* data;                  // the buffer's elements, wherever they are
    bool unwritten = false;   // logically zero, elements undefined
  };
  Entry& entry(int64_t k) { return entries_[static_cast<size_t>(k)]; }
  Entry& find(const Parameter<T>& p);

  std::vector<Entry> entries_;  // sorted by parameter address: a lookup allocates nothing
  Storage storage_ = Storage::kPrivate;
};

}  // namespace tapegrad
