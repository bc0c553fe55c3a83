#include "tapegrad/gradcheck.h"

#include <limits>

#include <algorithm>
#include <cmath>
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

// Runs f on a fresh recording, backpropagates `upstream`, returns every parameter's gradient.
std::vector<Tensor<double>> analytic_grads(Tape<double>& tape, const Fn& f,
                                           std::span<Parameter<double>* const> params,
                                           const Tensor<double>& upstream) {
  for (Parameter<double>* p : params) p->zero_grad();
  tape.clear();
  Var<double> y = f(tape);
  tape.backward(y, upstream.view());
  std::vector<Tensor<double>> grads;
  for (Parameter<double>* p : params) grads.push_back(p->grad);
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

}  // namespace

GradcheckResult gradcheck(std::string_view name, const Fn& f, std::span<Parameter<double>* const> params,
                          const GradcheckOptions& o) {
  GradcheckResult r;
  const std::string op(name);
  for (Parameter<double>* p : params)
    check(p != nullptr && p->requires_grad, "gradcheck '", op, "': every input must require grad");

  Tape<double> tape;
  Rng rng(o.seed);
  Shape out_shape;
  {
    auto guard = tape.no_grad();
    out_shape = f(tape).shape();
  }
  const Tensor<double> u = Tensor<double>::randn(out_shape, rng);
  const std::vector<Tensor<double>> analytic = analytic_grads(tape, f, params, u);
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
      const double v = p.value[i];
      p.value[i] = v + o.h;
      const double plus = probe(tape, f, u);
      p.value[i] = v - o.h;
      const double minus = probe(tape, f, u);
      p.value[i] = v;
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
                          const std::vector<Tensor<double>>& inputs, const GradcheckOptions& options) {
  std::vector<Parameter<double>> params;
  params.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) params.emplace_back(cat("input", i), inputs[i]);
  std::vector<Parameter<double>*> ptrs;
  for (auto& p : params) ptrs.push_back(&p);
  std::vector<Var<double>> vars(params.size());
  auto wrapped = [&](Tape<double>& tape) {
    for (size_t i = 0; i < params.size(); ++i) vars[i] = tape.param(params[i]);
    return f(tape, vars);
  };
  return gradcheck(name, wrapped, ptrs, options);
}

}  // namespace tapegrad
