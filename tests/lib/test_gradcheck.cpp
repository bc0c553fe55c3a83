// gradcheck must fail loudly on a wrong backward — a checker that cannot fail proves nothing.
#include <limits>

#include "support.h"
#include "tapegrad/ops.h"

using namespace tapegrad;
using namespace tapegrad::testing;

namespace {
// y = x^3 with a deliberately wrong derivative (2x^2 instead of 3x^2).
Var<double> bad_cube(Var<double> x) {
  Tape<double>& tape = x.tape();
  Var<double> y = tape.make_output("bad_cube", x.shape(), {x});
  const int64_t n = x.shape().numel();
  const double* xd = x.data();
  for (int64_t i = 0; i < n; ++i) y.data()[i] = xd[i] * xd[i] * xd[i];
  tape.record("bad_cube", {x}, y, [xd, n](const double* dy, double* const* dx) {
    for (int64_t i = 0; i < n; ++i) dx[0][i] += dy[i] * 2 * xd[i] * xd[i];
  });
  return y;
}

// y = 2x with a backward that is right the first time and adds a constant afterwards: it passes
// the finite-difference comparison but is not linear in the upstream gradient.
Var<double> stateful_double(Var<double> x, int* calls) {
  Tape<double>& tape = x.tape();
  Var<double> y = tape.make_output("stateful", x.shape(), {x});
  const int64_t n = x.shape().numel();
  for (int64_t i = 0; i < n; ++i) y.data()[i] = 2 * x.data()[i];
  tape.record("stateful", {x}, y, [n, calls](const double* dy, double* const* dx) {
    const double extra = (*calls)++ > 0 ? 1.0 : 0.0;
    for (int64_t i = 0; i < n; ++i) dx[0][i] += 2 * dy[i] + extra;
  });
  return y;
}
}  // namespace

TEST_CASE("gradcheck: detects a wrong derivative and names the op, input and index", "[gradcheck]") {
  auto r = gradcheck("bad_cube", [](Tape<double>&, std::span<const Var<double>> in) { return bad_cube(in[0]); },
                     {randn({2, 3}, 1)});
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.message, Catch::Contains("gradcheck 'bad_cube' FAILED for input 0 'input0' (2,3) at index ("));
  CHECK_THAT(r.message, Catch::Contains("analytic") && Catch::Contains("numeric"));
  CHECK(r.max_rel_error > 0.1);
}

TEST_CASE("gradcheck: detects a backward that keeps state between calls", "[gradcheck]") {
  int calls = 0;
  auto r = gradcheck(
      "stateful", [&](Tape<double>&, std::span<const Var<double>> in) { return stateful_double(in[0], &calls); },
      {randn({4}, 2)});
  CHECK_FALSE(r.ok);
  CHECK(r.variant == "repeat");
  CHECK_THAT(r.message, Catch::Contains("gradcheck 'stateful' FAILED: backward is not repeatable for input 0 'input0' (4) "
                                        "at index (0)") &&
                            Catch::Contains("does backward keep state between calls?"));
}

TEST_CASE("gradcheck: a correct composite passes with errors near 1e-9", "[gradcheck]") {
  auto r = gradcheck(
      "composite",
      [](Tape<double>&, std::span<const Var<double>> in) {
        return softmax(add(matmul(gelu(in[0]), in[1], Trans::kNo, Trans::kYes), in[2]));
      },
      {randn({3, 4, 5}, 3), randn({6, 5}, 4), randn({6}, 5)});
  require_gradcheck(r, 1e-6);
  CHECK_THAT(r.message, Catch::StartsWith("gradcheck 'composite' ok: 3 input(s), 96 elements"));
}

TEST_CASE("gradcheck: a tolerance or step that is NaN, negative or zero is refused, naming it", "[gradcheck][errors]") {
  // A NaN tolerance makes every comparison it takes part in pass; a zero step divides by zero.
  const TensorFunction twice = [](Tape<double>&, std::span<const Var<double>> in) { return sum(scale(in[0], 2.0)); };
  const std::vector<Tensor<double>> x{randn({3}, 1)};
  const auto with = [](auto set) {
    GradcheckOptions o;
    set(o);
    return o;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  REQUIRE_THROWS_WITH(gradcheck("twice", twice, x, with([&](GradcheckOptions& o) { o.atol = nan; })),
                      "gradcheck 'twice': atol must be a finite number >= 0, got nan");
  REQUIRE_THROWS_WITH(gradcheck("twice", twice, x, with([](GradcheckOptions& o) { o.rtol = -1; })),
                      "gradcheck 'twice': rtol must be a finite number >= 0, got -1");
  REQUIRE_THROWS_WITH(gradcheck("twice", twice, x, with([](GradcheckOptions& o) { o.h = 0; })),
                      "gradcheck 'twice': h must be a finite number > 0, got 0");
  REQUIRE_THROWS_WITH(gradcheck("twice", twice, x, with([](GradcheckOptions& o) { o.max_elements = -2; })),
                      "gradcheck 'twice': max_elements must be >= 0 (0: every element), got -2");
  CHECK(gradcheck("twice", twice, x, with([](GradcheckOptions& o) { o.atol = 0, o.rtol = 1e-6; })).ok);
}

TEST_CASE("gradcheck: sampling checks a seeded subset of elements", "[gradcheck]") {
  GradcheckOptions o;
  o.max_elements = 5;
  auto r = gradcheck("gelu", [](Tape<double>&, std::span<const Var<double>> in) { return gelu(in[0]); },
                     {randn({10, 10}, 6)}, o);
  require_gradcheck(r);
  CHECK_THAT(r.message, Catch::Contains("5 elements"));
}

namespace {
Var<double> weighted_product(Var<double> x, Var<double> w) { return sum(mul(mul(x, x), w)); }
}  // namespace

TEST_CASE("gradcheck: an op as a function of Vars, as torch.autograd.gradcheck(fn, inputs)", "[gradcheck]") {
  const auto r = gradcheck("weighted_product", weighted_product, {randn({2, 3}, 3), randn({2, 3}, 4)});
  INFO(r.message);
  CHECK(r.ok);
  CHECK(r.max_rel_error < 1e-6);
  CHECK_FALSE(gradcheck("bad_cube", bad_cube, {randn({2, 3}, 1)}).ok);  // the same verdicts as the span form
  REQUIRE_THROWS_WITH(gradcheck("weighted_product", weighted_product, {randn({2, 3}, 3)}),
                      "gradcheck weighted_product: the function takes 2 inputs, 1 given");
}
