#include "tapegrad/gradcheck.h"

#include "tapegrad/ops/add.h"
#include "tapegrad/ops/mul.h"
#include "tapegrad/ops/reduce.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "tapegrad/random.h"

namespace tapegrad {

namespace {

using Fn = std::function<Var<double>(Tape<double>&)>;

// "(2,1)" for flat index 9 of shape (4,4): the row-major unravelling, printed like a shape.
std::string multi_index(int64_t flat, const Shape& shape) {
  Shape idx = shape;
  for (int d = shape.rank() - 1; d >= 0; --d) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx.str();
}

double dot(TensorView<const double> a, TensorView<const double> b) {
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += a[i] * b[i];
  return s;
}

// Records f. Not inlined, so that f's frames lie where scribble_stack()'s buffer will.
[[gnu::noinline]] Var<double> record_graph(Tape<double>& tape, const Fn& f) { return f(tape); }

// Overwrites the stack below the caller's frame — where the frames of a function that has just
// returned were. A backward closure still pointing there then reads 0xA5 bytes (a tiny negative
// double, a non-canonical pointer) instead of the stale values that happened to survive.
[[gnu::noinline]] void scribble_stack(unsigned char pattern = 0xA5) {
  unsigned char buf[1 << 16];
  std::memset(buf, pattern, sizeof buf);
  asm volatile("" : : "r"(buf) : "memory");  // the writes must happen
}

// Runs f on a fresh recording, backpropagates `upstream`, returns every parameter's gradient.
// With `scribble`, the stack f used is overwritten between its return and backward.
std::vector<Tensor<double>> analytic_grads(Tape<double>& tape, const Fn& f,
                                           std::span<Parameter<double>* const> params,
                                           const Tensor<double>& upstream, bool scribble = true,
                                           unsigned char pattern = 0xA5) {
  for (Parameter<double>* p : params) p->zero_grad();
  tape.clear();
  Var<double> y = record_graph(tape, f);
  if (scribble) scribble_stack(pattern);
  tape.backward(y, upstream.view());
  std::vector<Tensor<double>> grads;
  for (Parameter<double>* p : params) grads.push_back(p->grad());
  return grads;
}

// <f(x), u> without recording anything.
double probe(Tape<double>& tape, const Fn& f, const Tensor<double>& upstream) {
  tape.clear();
  auto guard = tape.no_grad();
  return dot(f(tape).value(), upstream.view());
}

// The round-off of a central difference: s is a sum of terms f_i u_i, each rounded to ~eps of its
// size, so s carries an absolute error of ~eps * sum |f_i u_i|, and (s+ - s-) / 2h of that over h.
double central_difference_noise(Tape<double>& tape, const Fn& f, const Tensor<double>& upstream, double h) {
  tape.clear();
  auto guard = tape.no_grad();
  const TensorView<const double> y = f(tape).value();
  double terms = 0;
  for (int64_t i = 0; i < y.numel(); ++i) terms += std::abs(y[i] * upstream[i]);
  return 16 * std::numeric_limits<double>::epsilon() * terms / h;
}

std::vector<int64_t> elements_to_check(int64_t n, int64_t max_elements, Rng& rng) {
  std::vector<int64_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  if (max_elements > 0 && n > max_elements) {
    for (int64_t i = 0; i < max_elements; ++i) std::swap(idx[i], idx[i + rng.below(n - i)]);
    idx.resize(max_elements);
    std::sort(idx.begin(), idx.end());
  }
  return idx;
}

// While a variant runs, a crash (SIGSEGV, SIGBUS) first prints which variant it was; the process
// then dies as it would have. Under AddressSanitizer its own report, which names the frame, is kept.
#if defined(__SANITIZE_ADDRESS__)
#define TAPEGRAD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TAPEGRAD_ASAN 1
#endif
#endif

char g_crash_note[512];
size_t g_crash_note_len = 0;

extern "C" void print_crash_note(int sig) {
  if (::write(STDERR_FILENO, g_crash_note, g_crash_note_len) < 0) {
    // nothing more can be done in a signal handler
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

class CrashNote {
 public:
  explicit CrashNote([[maybe_unused]] const std::string& note) {
#ifndef TAPEGRAD_ASAN
    g_crash_note_len = std::min(note.size(), sizeof g_crash_note);
    std::memcpy(g_crash_note, note.data(), g_crash_note_len);
    struct sigaction sa {};
    sa.sa_handler = print_crash_note;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGSEGV, &sa, &old_segv_);
    ::sigaction(SIGBUS, &sa, &old_bus_);
#endif
  }
  ~CrashNote() {
#ifndef TAPEGRAD_ASAN
    ::sigaction(SIGSEGV, &old_segv_, nullptr);
    ::sigaction(SIGBUS, &old_bus_, nullptr);
#endif
  }
  CrashNote(const CrashNote&) = delete;
  CrashNote& operator=(const CrashNote&) = delete;

 private:
  [[maybe_unused]] struct sigaction old_segv_ {}, old_bus_ {};
};

// The first element where a and b differ beyond rel * scale (NaN counts as different), or -1.
int64_t first_difference(const Tensor<double>& a, const Tensor<double>& b, double rel) {
  double scale = 0;
  for (int64_t i = 0; i < a.numel(); ++i) scale = std::max(scale, std::abs(a[i]));
  for (int64_t i = 0; i < a.numel(); ++i)
    if (!(std::abs(a[i] - b[i]) <= rel * scale)) return i;
  return -1;
}

}  // namespace

GradcheckResult gradcheck(std::string_view name, const Fn& f, std::span<Parameter<double>* const> params,
                          const GradcheckOptions& o) {
  GradcheckResult r;
  const std::string op(name);
  for (Parameter<double>* p : params)
    check(p != nullptr && p->requires_grad, "gradcheck '", op, "': every input must require grad");
  // A NaN tolerance would pass every comparison it takes part in, a negative one fail them all.
  check_finite(o.h, Bound::kPositive, "gradcheck '", op, "': h");
  check_finite(o.atol, Bound::kNonNegative, "gradcheck '", op, "': atol");
  check_finite(o.rtol, Bound::kNonNegative, "gradcheck '", op, "': rtol");
  check(o.max_elements >= 0, "gradcheck '", op, "': max_elements must be >= 0 (0: every element), got ", o.max_elements);

  Tape<double> tape;
  Rng rng(o.seed);
  Shape out_shape;
  {
    auto guard = tape.no_grad();
    out_shape = f(tape).shape();
  }
  const Tensor<double> u = Tensor<double>::randn(out_shape, rng);
  const auto repeat_message = [&](size_t k, int64_t i, double a, double b) {
    return cat("gradcheck '", op, "' FAILED: backward is not repeatable for input ", k, " '", params[k]->name, "' ",
               params[k]->shape(), " at index ", multi_index(i, params[k]->shape()), ": the same upstream gradient "
               "gave ", a, ", then ", b, " (does backward keep state between calls?)");
  };
  const auto stack_message = [&](size_t k, int64_t i, double a, double b, const char* when) {
    return cat("gradcheck '", op, "' FAILED (variant: after return) for input ", k, " '", params[k]->name, "' ",
               params[k]->shape(), " at index ", multi_index(i, params[k]->shape()), ": the gradient is ", a, " and ",
               b, " ", when, ": a backward closure reads a local of the function that built the graph, whose stack "
               "is dead once it returns (captured by reference, [&]?); capture by value, or copy it into tape "
               "memory (CustomOp::save)");
  };
  // First with the dead stack overwritten by one pattern, another, and the first again: a gradient
  // that repeats under the same pattern but changes with it reads the builder's stack (a reference
  // capture). Then twice with the stack left alone (a backward that keeps state between calls
  // differs), then against an overwritten run.
  {
    CrashNote note(cat("gradcheck '", op, "': crashed in backward once the stack of the function that built the graph "
                       "was overwritten: a backward closure points into it (captured by reference, [&]?); capture by "
                       "value, or copy what backward needs into tape memory (CustomOp::save, tape.scratch)\n"));
    const std::vector<Tensor<double>> a = analytic_grads(tape, f, params, u, /*scribble=*/true, 0xA5);
    const std::vector<Tensor<double>> b = analytic_grads(tape, f, params, u, /*scribble=*/true, 0x5A);
    const std::vector<Tensor<double>> a2 = analytic_grads(tape, f, params, u, /*scribble=*/true, 0xA5);
    for (size_t k = 0; k < params.size(); ++k) {
      if (const int64_t i = first_difference(a[k], a2[k], 0.0); i >= 0) {
        r.variant = "repeat";
        r.message = repeat_message(k, i, a[k][i], a2[k][i]);
        return r;
      }
      const int64_t i = first_difference(a[k], b[k], 0.0);
      if (i < 0) continue;
      r.variant = "after return";
      r.message = stack_message(k, i, a[k][i], b[k][i], "with the dead stack overwritten by two different patterns");
      return r;
    }
  }
  const std::vector<Tensor<double>> clean = analytic_grads(tape, f, params, u, /*scribble=*/false);
  const std::vector<Tensor<double>> again = analytic_grads(tape, f, params, u, /*scribble=*/false);
  for (size_t k = 0; k < params.size(); ++k) {
    const int64_t i = first_difference(clean[k], again[k], 0.0);
    if (i < 0) continue;
    r.variant = "repeat";
    r.message = repeat_message(k, i, clean[k][i], again[k][i]);
    return r;
  }
  std::vector<Tensor<double>> analytic;
  {
    CrashNote note(cat("gradcheck '", op, "': crashed in backward once the stack of the function that built the graph "
                       "was overwritten: a backward closure points into it (captured by reference, [&]?); capture by "
                       "value, or copy what backward needs into tape memory (CustomOp::save, tape.scratch)\n"));
    analytic = analytic_grads(tape, f, params, u);
  }
  for (size_t k = 0; k < params.size(); ++k) {
    const int64_t i = first_difference(clean[k], analytic[k], 0.0);
    if (i < 0) continue;
    r.variant = "after return";
    r.message = stack_message(k, i, clean[k][i], analytic[k][i], "with the building function's stack left alone and overwritten");
    return r;
  }
  const double noise = central_difference_noise(tape, f, u, o.h);

  r.ok = true;
  int64_t checked = 0;
  for (size_t k = 0; k < params.size() && r.ok; ++k) {
    Parameter<double>& p = *params[k];
    const Tensor<double>& a = analytic[k];
    double max_diff = 0, max_num = 0, max_analytic = 0, worst_ratio = -1;
    int64_t worst = -1;
    double worst_a = 0, worst_n = 0;
    for (int64_t i : elements_to_check(p.numel(), o.max_elements, rng)) {
      const double v = p.value()[i];
      p.value()[i] = v + o.h;
      const double plus = probe(tape, f, u);
      p.value()[i] = v - o.h;
      const double minus = probe(tape, f, u);
      p.value()[i] = v;
      const double num = (plus - minus) / (2 * o.h);
      const double diff = std::abs(a[i] - num);
      if (!std::isfinite(a[i])) r.ok = false;  // NaN compares false below; catch it here
      max_diff = std::max(max_diff, diff);
      max_num = std::max(max_num, std::abs(num));
      max_analytic = std::max(max_analytic, std::abs(a[i]));
      const double ratio = diff / (o.atol + o.rtol * std::abs(num));
      if (ratio > worst_ratio || !std::isfinite(a[i])) {
        worst_ratio = ratio, worst = i, worst_a = a[i], worst_n = num;
      }
      ++checked;
    }
    // An input whose gradient is zero (both ways, to the differences' round-off) — a gain feeding
    // a scale-invariant norm, say — has no meaningful relative error: it is reported as zero.
    const bool zero = max_num <= noise && max_analytic <= noise;
    const double rel = zero ? 0.0 : max_diff / std::max(max_num, 1e-12);
    r.zero_gradient_inputs += zero;
    r.inputs.push_back({p.name, p.shape(), rel, max_diff, max_num, zero});
    r.max_rel_error = std::max(r.max_rel_error, rel);
    r.max_abs_error = std::max(r.max_abs_error, max_diff);
    if (worst_ratio > 1 || !r.ok) {
      r.ok = false;
      r.message = cat("gradcheck '", op, "' FAILED for input ", k, " '", p.name, "' ", p.shape(),
                      " at index ", multi_index(worst, p.shape()), ": analytic ", worst_a, ", numeric ",
                      worst_n, ", |diff| ", std::abs(worst_a - worst_n), " > atol ", o.atol, " + rtol ",
                      o.rtol, " * |numeric|; relative error (inf-norm) of this input ", rel);
    }
  }
  if (!r.ok) return r;

  if (o.check_linearity) {
    const Tensor<double> u2 = Tensor<double>::randn(out_shape, rng);
    Tensor<double> mix(out_shape);
    for (int64_t i = 0; i < mix.numel(); ++i) mix[i] = 2.0 * u[i] - 3.0 * u2[i];
    const auto g2 = analytic_grads(tape, f, params, u2);
    const auto gm = analytic_grads(tape, f, params, mix);
    for (size_t k = 0; k < params.size(); ++k) {
      double worst = 0, scale = 1e-300;
      for (int64_t i = 0; i < gm[k].numel(); ++i) {
        const double expect = 2.0 * analytic[k][i] - 3.0 * g2[k][i];
        worst = std::max(worst, std::abs(gm[k][i] - expect));
        scale = std::max(scale, std::abs(expect));
      }
      if (worst > 1e-9 * scale + 1e-12) {
        r.ok = false;
        r.message = cat("gradcheck '", op, "' FAILED: backward is not linear in the upstream gradient for input ",
                        k, " '", params[k]->name, "' (max deviation ", worst, " against scale ", scale,
                        "); does backward depend on the upstream gradient non-linearly, or keep state between calls?");
        return r;
      }
    }
  }
  tape.clear();
  for (Parameter<double>* p : params) p->zero_grad();
  r.message = cat("gradcheck '", op, "' ok: ", params.size(), " input(s), ", checked,
                  " elements, max relative error (inf-norm) ", r.max_rel_error, ", max abs error ",
                  r.max_abs_error, o.check_linearity ? ", backward linear in the upstream gradient" : "",
                  r.zero_gradient_inputs ? cat("; ", r.zero_gradient_inputs, " input(s) with a zero gradient (below the "
                                               "differences' round-off ", noise, ")")
                                         : "");
  return r;
}

GradcheckResult gradcheck(std::string_view name, const Fn& f, std::initializer_list<Parameter<double>*> params,
                          const GradcheckOptions& options) {
  return gradcheck(name, f, std::span<Parameter<double>* const>(params.begin(), params.size()), options);
}

GradcheckResult gradcheck(std::string_view name, const TensorFunction& f,
                          const std::vector<Tensor<double>>& inputs, const GradcheckOptions& o) {
  const std::string op(name);
  const size_t n = inputs.size();
  std::vector<Parameter<double>> params;
  params.reserve(n);
  for (size_t i = 0; i < n; ++i) params.emplace_back(cat("input", i), inputs[i]);
  std::vector<Parameter<double>*> ptrs;
  for (auto& p : params) ptrs.push_back(&p);
  std::vector<Var<double>> vars(n);
  const Fn all_leaves = [&](Tape<double>& tape) {
    for (size_t i = 0; i < n; ++i) vars[i] = tape.param(params[i]);
    return f(tape, vars);
  };
  GradcheckResult r = gradcheck(name, all_leaves, ptrs, o);
  if (!r.ok || !o.variants) return r;

  // The plain check's upstream gradient (its generator's first draw) and gradients.
  Tape<double> tape;
  Shape out_shape;
  {
    auto guard = tape.no_grad();
    out_shape = all_leaves(tape).shape();
  }
  Rng rng(o.seed);
  const Tensor<double> u = Tensor<double>::randn(out_shape, rng);
  const std::vector<Tensor<double>> expect = analytic_grads(tape, all_leaves, ptrs, u);

  std::vector<std::string> passed;  // the variants run, by name, for the report
  // Each input in turn a constant: nothing may crash, and the others' gradients stay the same.
  for (size_t k = 0; k < n; ++k) {
    CrashNote note(cat("gradcheck '", op, "': crashed in the variant with input ", k, " a constant (tape.constant): ",
                       "a backward that writes din[", k, "] without checking it for null crashes so; CustomOp ",
                       "(custom_op.h) runs a gradient rule only for inputs that need one\n"));
    for (auto& p : params) p.zero_grad();
    tape.clear();
    const Fn one_constant = [&](Tape<double>& t) {
      for (size_t i = 0; i < n; ++i) vars[i] = i == k ? t.constant(params[i].value().view()) : t.param(params[i]);
      return f(t, vars);
    };
    Var<double> y = record_graph(tape, one_constant);
    scribble_stack();
    ++r.variants_run;
    passed.push_back(cat("input ", k, " constant"));
    if (!y.requires_grad()) continue;  // a one-input op: nothing left to differentiate
    tape.backward(y, u.view());
    for (size_t j = 0; j < n; ++j) {
      if (j == k) continue;
      const int64_t i = first_difference(expect[j], params[j].grad(), 1e-12);
      if (i < 0) continue;
      r.ok = false;
      r.variant = cat("input ", k, " constant");
      r.message = cat("gradcheck '", op, "' FAILED (variant: input ", k, " constant) for input ", j, " ", params[j].shape(),
                      " at index ", multi_index(i, params[j].shape()), ": gradient ", params[j].grad()[i], " with input ", k,
                      " a constant, ", expect[j][i], " with every input a leaf: a backward that mixes up its inputs' "
                      "gradients when one needs none?");
      return r;
    }
  }
  for (auto& p : params) p.zero_grad();

  // Each input's gradient buffer already holding another use's gradient when f's backward runs:
  // out = <f(x), u> + <x_k, c>, the second term recorded after f, so its backward runs first and
  // leaves c in x_k's buffer. A backward that assigns with = instead of accumulating with += (in
  // the raw make_output/record interface) overwrites it: x_k's gradient is then f's alone.
  Rng crng(o.seed ^ 0x9e3779b97f4a7c15ULL);
  for (size_t k = 0; k < n; ++k) {
    const Tensor<double> c = Tensor<double>::randn(params[k].shape(), crng);
    const Fn prefilled = [&](Tape<double>& t) {
      for (size_t i = 0; i < n; ++i) vars[i] = t.param(params[i]);
      const Var<double> first = sum(mul(f(t, vars), t.constant(u.view())));
      return add(first, sum(mul(vars[k], t.constant(c.view()))));
    };
    for (auto& p : params) p.zero_grad();
    tape.clear();
    Var<double> y = record_graph(tape, prefilled);
    scribble_stack();
    tape.backward(y);
    ++r.variants_run;
    passed.push_back(cat("input ", k, "'s gradient pre-filled"));
    Tensor<double> want = expect[k];
    for (int64_t i = 0; i < want.numel(); ++i) want[i] += c[i];
    const int64_t i = first_difference(want, params[k].grad(), 1e-10);
    if (i < 0) continue;
    r.ok = false;
    r.variant = cat("input ", k, "'s gradient pre-filled");
    r.message = cat("gradcheck '", op, "' FAILED (variant: input ", k, "'s gradient pre-filled) for input ", k, " ",
                    params[k].shape(), " at index ", multi_index(i, params[k].shape()), ": gradient ", params[k].grad()[i],
                    ", expected ", want[i], " (this op's ", expect[k][i], " plus ", c[i], " from another use of the "
                    "input, whose backward ran first): does backward assign its input's gradient with = instead of "
                    "accumulating with +=?");
    return r;
  }
  for (auto& p : params) p.zero_grad();

  // The same Var as inputs i and j: both uses' gradients must add (a backward that assigns with
  // = instead of += loses one), checked against finite differences of f(.., x, .., x, ..).
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      if (inputs[i].shape() != inputs[j].shape()) continue;
      std::vector<Parameter<double>*> shared;
      for (size_t m = 0; m < n; ++m)
        if (m != j) shared.push_back(ptrs[m]);
      const Fn aliased = [&](Tape<double>& t) {
        for (size_t m = 0; m < n; ++m)
          if (m != j) vars[m] = t.param(params[m]);
        vars[j] = vars[i];
        return f(t, vars);
      };
      GradcheckOptions plain = o;
      plain.check_linearity = false;
      GradcheckResult a = gradcheck(cat(op, " with inputs ", i, " and ", j, " the same Var"), aliased, shared, plain);
      ++r.variants_run;
      passed.push_back(cat("inputs ", i, " and ", j, " aliased"));
      if (!a.ok) {
        a.variant = cat("inputs ", i, " and ", j, " aliased");
        a.message += cat(" (variant: inputs ", i, " and ", j, " aliased: the gradients of both uses must add; does "
                         "backward assign with = instead of accumulating with +=?)");
        a.variants_run = r.variants_run;
        return a;
      }
    }
  }
  std::string names;
  for (const std::string& v : passed) names += (names.empty() ? "" : ", ") + v;
  r.message += cat("; ", r.variants_run, " variant(s) pass: ", names);
  return r;
}

}  // namespace tapegrad
