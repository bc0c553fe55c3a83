// Linear: y = x W^T + b, with W stored (out, in) as torch.nn.Linear, x of shape (..., in).
#pragma once

#include "tapegrad/nn/module.h"
#include "tapegrad/precision.h"

namespace tapegrad::nn {

// Kernels over `rows` rows (all leading dims flattened). backward adds into whichever of dx, dw,
// db is non-null, or overwrites the ones `add` marks false: a buffer that holds no gradient yet
// (a fused module's internal one, or one the tape hands over unwritten: Tape::din_fresh) then
// needs no zero-fill first, and its GEMM no read of zeros (beta = 0).
// `p`: the GEMMs' operand precision (precision.h; the op records autocast_state().gemm at forward).
struct LinearGradAdd {
  bool dx = true, dw = true, db = true;
};

// The GEMMs' operands as the caller rounded them to bf16 ahead (gemm_bf16.h, Bf16Operands), at
// p = kBf16: x holds bf16 values (forward and dW read it as it is); dy, when given, is round_bf16
// of backward's dy, which dx, dW and db read (at kBf16 db sums the rounded dy whether or not the
// caller gives it: without it, linear_backward rounds a copy); w holds bf16 values (forward and dx
// read it as it is: a copy from rounded_weight, below).
template <typename T>
struct LinearRounded {
  bool x = false;
  const T* dy = nullptr;
  bool w = false;
};

// A weight as an op's GEMMs read it. Inside a training step the weight's bf16 form comes from the
// step's operand cache (bf16_operand_cache.h), made once for every op and worker; outside one (a
// loop of your own under Autocast) an op that reads W in two GEMMs (forward and dx) rounds it once,
// ahead, into a copy the tape keeps until backward — as torch.autocast keeps the bf16 cast it made
// for the backward. `ahead`: the op rounds ahead (round_ahead) and a second GEMM reads W.
template <typename T>
struct WeightOperand {
  const T* w = nullptr;
  bool rounded = false;
};
template <typename T>
WeightOperand<T> rounded_weight(Tape<T>& tape, const T* w, int64_t n, bool ahead);

template <typename T>
void linear_forward(T* y, const T* x, const T* w, const T* b, int64_t rows, int64_t in, int64_t out,
                    Precision p = Precision::kFp32, LinearRounded<T> rounded = {});
template <typename T>
void linear_backward(T* dx, T* dw, T* db, const T* dy, const T* x, const T* w, int64_t rows, int64_t in,
                     int64_t out, LinearGradAdd add = {}, Precision p = Precision::kFp32, LinearRounded<T> rounded = {});

// One tape node. `b` may be an undefined Var (no bias).
template <typename T>
Var<T> linear(Var<T> x, Var<T> w, Var<T> b = {});

struct LinearOptions {
  int64_t in = 0;
  int64_t out = 0;
  bool bias = true;
  // > 0: weight ~ N(0, init_std^2), bias 0 (GPT-2). 0 (default): torch.nn.Linear's
  // U(-1/sqrt(in), 1/sqrt(in)) for weight and bias.
  double init_std = 0;
};

template <typename T = float>
class Linear : public UnaryModule<T> {
 public:
  // Initialised at construction from the default generator (init.h), as options say.
  explicit Linear(LinearOptions options);
  Linear(int64_t in, int64_t out, bool bias = true) : Linear(LinearOptions{.in = in, .out = out, .bias = bias}) {}
  void reset_parameters(Rng& rng) override;
  Var<T> forward(Var<T> x) override;

  Parameter<T>& weight() { return *weight_; }
  Parameter<T>* bias() { return bias_; }
  const LinearOptions& options() const { return options_; }
  std::string type_name() const override { return "Linear"; }
  std::string options_repr() const override;

 private:
  LinearOptions options_;
  Parameter<T>* weight_;
  Parameter<T>* bias_ = nullptr;
};

}  // namespace tapegrad::nn
