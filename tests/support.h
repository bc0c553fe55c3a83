// Helpers shared by the tests: element-wise comparison with a useful failure message, random
// inputs, and the float32-vs-float64 agreement check every op gets.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include "tapegrad/gradcheck.h"
#include "tapegrad/random.h"
#include "tapegrad/tape.h"

namespace tapegrad::testing {

// Largest |actual - expected|; the message names the first index outside atol + rtol|expected|.
template <typename T>
class AllCloseMatcher : public Catch::MatcherBase<TensorView<const T>> {
 public:
  AllCloseMatcher(std::vector<double> expected, double atol, double rtol)
      : expected_(std::move(expected)), atol_(atol), rtol_(rtol) {}
  bool match(const TensorView<const T>& actual) const override {
    if (actual.numel() != static_cast<int64_t>(expected_.size())) {
      detail_ = "has " + std::to_string(actual.numel()) + " elements, expected " + std::to_string(expected_.size());
      return false;
    }
    for (size_t i = 0; i < expected_.size(); ++i) {
      const double a = actual[static_cast<int64_t>(i)], e = expected_[i];
      if (!(std::abs(a - e) <= atol_ + rtol_ * std::abs(e))) {
        std::ostringstream os;
        os.precision(10);
        os << "differs at flat index " << i << ": " << a << " vs expected " << e;
        detail_ = os.str();
        return false;
      }
    }
    return true;
  }
  std::string describe() const override {
    std::ostringstream os;
    os << "is all-close (atol " << atol_ << ", rtol " << rtol_ << ") to the expected values";
    if (!detail_.empty()) os << "; " << detail_;
    return os.str();
  }

 private:
  std::vector<double> expected_;
  double atol_, rtol_;
  mutable std::string detail_;
};

template <typename T>
AllCloseMatcher<T> AllClose(std::vector<double> expected, double atol = 1e-6, double rtol = 1e-6) {
  return AllCloseMatcher<T>(std::move(expected), atol, rtol);
}

template <typename T>
std::vector<double> to_vector(TensorView<const T> t) {
  return std::vector<double>(t.data(), t.data() + t.numel());
}

// Asserts that a gradcheck passed with the tight tolerance a correct double-precision backward
// reaches on well-conditioned inputs, printing the report either way.
inline void require_gradcheck(const GradcheckResult& r, double max_rel_error = 1e-6) {
  INFO(r.message);
  REQUIRE(r.ok);
  CHECK(r.max_rel_error < max_rel_error);
}

// Runs the same generic function — f(auto& tape, auto inputs) — on a float tape and a double tape
// with the same inputs (rounded to float first), backpropagates the same random upstream gradient,
// and requires the output and every input gradient to agree within `tol` relative to the largest
// magnitude of the double result.
template <typename T>
struct PrecisionRun {
  std::vector<Parameter<T>> params;
  Tape<T> tape;
  Var<T> out;
};

template <typename T, typename F>
void run_precision(PrecisionRun<T>& run, F& f, const std::vector<Tensor<double>>& inputs, const Tensor<double>* u) {
  for (const auto& x : inputs) run.params.emplace_back("x", x.cast<float>().template cast<T>());
  std::vector<Var<T>> vars;
  for (auto& p : run.params) vars.push_back(run.tape.param(p));
  run.out = f(run.tape, std::span<const Var<T>>(vars));
  if (u) {
    const Tensor<T> upstream = u->cast<T>();
    run.tape.backward(run.out, upstream.view());
  }
}

template <typename F>
void require_precisions_agree(F f, const std::vector<Tensor<double>>& inputs, double tol) {
  PrecisionRun<double> r64;
  run_precision(r64, f, inputs, nullptr);
  Rng rng(99);
  // Rounded to float so both precisions start from the same upstream gradient.
  const Tensor<double> u = Tensor<double>::randn(r64.out.shape(), rng).cast<float>().cast<double>();
  r64.tape.backward(r64.out, u.view());
  PrecisionRun<float> r32;
  run_precision(r32, f, inputs, &u);

  auto compare = [&](const std::string& what, TensorView<const float> a, TensorView<const double> b) {
    double scale = 1e-30, worst = 0;
    for (int64_t i = 0; i < b.numel(); ++i) {
      scale = std::max(scale, std::abs(b[i]));
      worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]));
    }
    INFO(what << ": max |float - double| = " << worst << " relative to max |double| = " << scale
              << " (tolerance " << tol << ")");
    CHECK(worst <= tol * scale);
  };
  compare("output", r32.out.value(), r64.out.value());
  for (size_t i = 0; i < inputs.size(); ++i)
    compare("gradient of input " + std::to_string(i), r32.params[i].grad().view(), r64.params[i].grad().view());
}

// A random tensor with entries N(0, std^2), from a seeded generator.
inline Tensor<double> randn(Shape shape, uint64_t seed, double std = 1.0) {
  Rng rng(seed);
  return Tensor<double>::randn(shape, rng, std);
}

}  // namespace tapegrad::testing
