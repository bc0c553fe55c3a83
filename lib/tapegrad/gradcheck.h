// gradcheck: prove a backward pass with finite differences, in double precision.
//
// For a function f recorded on a tape and a random upstream gradient u (not all ones: a wrong
// transpose or a missing sum can hide behind a uniform u), the tape's vector-Jacobian product
// u^T J is compared, element by element, with central differences of s(x) = <f(x), u>:
//     numeric_i = (s(x + h e_i) - s(x - h e_i)) / (2h)
// An element passes when |analytic - numeric| <= atol + rtol |numeric| (PyTorch's rule and
// defaults). It also checks that backward is linear in u: grad(a u1 + b u2) = a grad(u1) + b grad(u2).
//
// Backward always runs after the function that built the graph has returned and its stack has
// been overwritten, so a closure that captured that function's locals by reference ([&]) gives
// wrong gradients here (and a stack-use-after-return report under ASan) rather than in training.
// For functions of tensors (the second overload), it also runs the variants that break ops which
// pass the plain check (GradcheckOptions::variants):
//   constants  each input in turn as tape.constant(...): a backward that writes din[i] of an
//              input that needs no gradient (a null pointer) crashes here, with a note saying so;
//              the other inputs' gradients must be unchanged
//   aliases    the same Var as inputs i and j (every pair of equal shapes): the gradients of
//              both uses must add, checked against finite differences of f(x, x)
// A failure names the variant (GradcheckResult::variant), the input and the worst index.
//
// Example, in a Catch2 test for your own op:
//
//   Rng rng(7);
//   std::vector<Tensor<double>> inputs{Tensor<double>::randn({3, 5}, rng)};
//   auto r = gradcheck("my_op", [](Tape<double>&, std::span<const Var<double>> in) {
//     return my_op(in[0]);
//   }, inputs);
//   INFO(r.message);
//   REQUIRE(r.ok);
//   CHECK(r.max_rel_error < 1e-6);
//
// To check a module with respect to its parameters, pass them instead:
//   gradcheck("layernorm", [&](Tape<double>& t) { return ln.forward(t.param(x)); }, ln.parameters())
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tapegrad/error.h"
#include "tapegrad/parameter.h"
#include "tapegrad/tape.h"

namespace tapegrad {

struct GradcheckOptions {
  double h = 1e-6;     // central-difference step
  double atol = 1e-5;  // per-element tolerance: atol + rtol * |numeric|
  double rtol = 1e-3;
  uint64_t seed = 0x5eed;         // of the random upstream gradient
  bool check_linearity = true;    // backward(a u1 + b u2) = a backward(u1) + b backward(u2)
  int64_t max_elements = 0;       // per input; 0 = every element, else a seeded random sample
  bool variants = true;           // tensor functions: also each input constant, and aliased pairs
};

struct GradcheckInput {
  std::string name;
  Shape shape;
  double rel_error = 0;    // ||analytic - numeric||_inf / ||numeric||_inf for this input
  double abs_error = 0;    // ||analytic - numeric||_inf
  double max_numeric = 0;  // ||numeric||_inf: how large this input's gradient is
  // Analytic and numeric gradients both below the central differences' round-off
  // (16 eps sum|f_i u_i| / h): the gradient is zero, and rel_error is reported as 0.
  bool zero_gradient = false;
};

struct GradcheckResult {
  bool ok = false;
  std::vector<GradcheckInput> inputs;  // per input, in order (up to the first failing one)
  // Largest ||analytic - numeric||_inf / ||numeric||_inf over the inputs: a scale-free figure
  // that is ~1e-9 for a correct backward on well-conditioned inputs.
  double max_rel_error = 0;
  double max_abs_error = 0;
  int zero_gradient_inputs = 0;  // inputs found to have a zero gradient (see GradcheckInput)
  // Which check failed: "" (the plain one), "repeat" (backward gave other gradients the second
  // time), "after return" (backward read the builder's stack),
  // "input k constant", "input k's gradient pre-filled", "inputs i and j aliased". Empty on success.
  std::string variant;
  int variants_run = 0;  // how many variants ran (and passed, when ok)
  std::string message;   // a one-line summary; on failure: op, variant, input, worst index, values
};

// Checks d f / d p for every parameter in `params` (whose value f reads through tape.param(p)).
GradcheckResult gradcheck(std::string_view name, const std::function<Var<double>(Tape<double>&)>& f,
                          std::span<Parameter<double>* const> params, const GradcheckOptions& options = {});
GradcheckResult gradcheck(std::string_view name, const std::function<Var<double>(Tape<double>&)>& f,
                          std::initializer_list<Parameter<double>*> params,
                          const GradcheckOptions& options = {});

// Checks a function of plain tensors: f receives one Var per input, in order.
using TensorFunction = std::function<Var<double>(Tape<double>&, std::span<const Var<double>>)>;
GradcheckResult gradcheck(std::string_view name, const TensorFunction& f, const std::vector<Tensor<double>>& inputs,
                          const GradcheckOptions& options = {});

// Checks an op written as a function of Vars, one per input, as torch.autograd.gradcheck(fn,
// inputs) does: gradcheck("my_op", my_op<double>, {x, y}).
template <typename... Args>
  requires(sizeof...(Args) >= 1 && (std::same_as<Args, Var<double>> && ...))
GradcheckResult gradcheck(std::string_view name, Var<double> (*f)(Args...), const std::vector<Tensor<double>>& inputs,
                          const GradcheckOptions& options = {}) {
  check(f != nullptr, "gradcheck ", name, ": the function is null");
  check(inputs.size() == sizeof...(Args), "gradcheck ", name, ": the function takes ", sizeof...(Args), " inputs, ",
        inputs.size(), " given");
  const TensorFunction call = [f](Tape<double>&, std::span<const Var<double>> in) {
    return [&]<size_t... I>(std::index_sequence<I...>) { return f(in[I]...); }(std::index_sequence_for<Args...>{});
  };
  return gradcheck(name, call, inputs, options);
}

}  // namespace tapegrad
