// Custom ops: each mistake a user made with the raw tape interface is caught — by gradcheck's
// variants (a null din, = instead of +=, a closure into a returned frame), by CustomOp's checks,
// or by the compiler (tests/lib/custom_op_compile_errors/) — and the same ops written with
// CustomOp are right by construction.
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "support.h"
#include "tapegrad/custom_op.h"
#include "tapegrad/ops.h"

using namespace tapegrad;
using namespace tapegrad::testing;

namespace {

// ---- raw tape interface, each with one mistake ------------------------------------------------

// y = a * b (same shapes), backward writing both din without checking for null: right while both
// inputs are leaves, a crash as soon as one is tape.constant(...).
Var<double> mul_forgets_null(Var<double> a, Var<double> b) {
  Tape<double>& tape = a.tape();
  Var<double> y = tape.make_output("mul_forgets_null", a.shape(), {a, b});
  const int64_t n = a.shape().numel();
  const double *av = a.data(), *bv = b.data();
  for (int64_t i = 0; i < n; ++i) y.data()[i] = av[i] * bv[i];
  tape.record("mul_forgets_null", {a, b}, y, [av, bv, n](const double* dy, double* const* din) {
    for (int64_t i = 0; i < n; ++i) din[0][i] += dy[i] * bv[i];
    for (int64_t i = 0; i < n; ++i) din[1][i] += dy[i] * av[i];
  });
  return y;
}

// The same with null checks, but assigning (=) instead of accumulating (+=): right for distinct
// inputs, wrong for mul(x, x), whose two gradient halves land in one buffer.
Var<double> mul_assigns(Var<double> a, Var<double> b) {
  Tape<double>& tape = a.tape();
  Var<double> y = tape.make_output("mul_assigns", a.shape(), {a, b});
  const int64_t n = a.shape().numel();
  const double *av = a.data(), *bv = b.data();
  for (int64_t i = 0; i < n; ++i) y.data()[i] = av[i] * bv[i];
  tape.record("mul_assigns", {a, b}, y, [av, bv, n](const double* dy, double* const* din) {
    if (din[0])
      for (int64_t i = 0; i < n; ++i) din[0][i] = dy[i] * bv[i];
    if (din[1])
      for (int64_t i = 0; i < n; ++i) din[1][i] = dy[i] * av[i];
  });
  return y;
}

// y = 3 x, assigning (=) its gradient: right alone, wrong as soon as another use of x has put its
// gradient in the buffer first (f(x) + 3x trained with 0.6225 for 3.6225).
Var<double> triple_assigns(Var<double> x) {
  Tape<double>& tape = x.tape();
  Var<double> y = tape.make_output("triple_assigns", x.shape(), {x});
  const int64_t n = x.shape().numel();
  for (int64_t i = 0; i < n; ++i) y.data()[i] = 3 * x.data()[i];
  tape.record("triple_assigns", {x}, y, [n](const double* dy, double* const* din) {
    for (int64_t i = 0; i < n; ++i) din[0][i] = 3 * dy[i];
  });
  return y;
}

// y = k x with k a local of this function, captured by reference: backward reads this frame after
// it has returned.
[[gnu::noinline]] Var<double> scale_by_reference(Var<double> x, double factor) {
  Tape<double>& tape = x.tape();
  Var<double> y = tape.make_output("scale_by_reference", x.shape(), {x});
  const int64_t n = x.shape().numel();
  const double k = factor * 1.5;
  for (int64_t i = 0; i < n; ++i) y.data()[i] = k * x.data()[i];
  tape.record("scale_by_reference", {x}, y, [n, &k](const double* dy, double* const* din) {
    for (int64_t i = 0; i < n; ++i) din[0][i] += k * dy[i];
  });
  return y;
}

// ---- the same ops with CustomOp ----------------------------------------------------------------

// y = a * exp(b):  d/da = exp(b) dy;  d/db = a exp(b) dy = y dy. The rules assign (=): CustomOp
// hands them zeroed buffers and adds them in.
template <typename T>
Var<T> scaled_exp(Var<T> a, Var<T> b) {
  CustomOp<T> op("scaled_exp", {a, b}, a.shape());
  op.require_same_shape(0, 1);
  const int64_t n = op.output_shape().numel();
  const T *av = op.input(0), *bv = op.input(1);
  T* y = op.output();
  for (int64_t i = 0; i < n; ++i) y[i] = av[i] * std::exp(bv[i]);
  op.grad(0, [=](const T* dy, T* da) {
    for (int64_t i = 0; i < n; ++i) da[i] = dy[i] * std::exp(bv[i]);
  });
  op.grad(1, [=](const T* dy, T* db) {
    for (int64_t i = 0; i < n; ++i) db[i] = dy[i] * y[i];
  });
  return op.finish();
}

// y = k x with k computed in the forward: kept in tape memory with save(), not on this stack.
[[gnu::noinline]] Var<double> scale_saved(Var<double> x, double factor) {
  CustomOp<double> op("scale_saved", {x}, x.shape());
  const double k_local = factor * 1.5;
  const double* k = op.save({&k_local, 1});
  const int64_t n = x.shape().numel();
  for (int64_t i = 0; i < n; ++i) op.output()[i] = *k * op.input(0)[i];
  op.grad(0, [=](const double* dy, double* dx) {
    for (int64_t i = 0; i < n; ++i) dx[i] = *k * dy[i];
  });
  return op.finish();
}

// Runs `body` in a child process (a crash must not end the test binary) and returns its exit
// status and what it wrote to stderr. Small tensors only: no OpenMP region runs in the child.
struct ChildResult {
  int status = 0;  // exit code, or 128 + signal
  std::string err;
};
template <typename Body>
ChildResult run_in_child(Body body) {
  std::fflush(nullptr);
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(pipe_fds[1], STDERR_FILENO);
    ::close(pipe_fds[0]);
    ::_exit(body());
  }
  ::close(pipe_fds[1]);
  ChildResult r;
  char buf[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) r.err.append(buf, static_cast<size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif

GradcheckResult check_binary(const char* name, Var<double> (*op)(Var<double>, Var<double>)) {
  return gradcheck(name, [op](Tape<double>&, std::span<const Var<double>> in) { return op(in[0], in[1]); },
                   {randn({3, 4}, 1), randn({3, 4}, 2)});
}

}  // namespace

TEST_CASE("custom op: a backward that writes a null din is caught by gradcheck's constant variant", "[op][custom]") {
  const ChildResult c = run_in_child([] {
    const GradcheckResult r = check_binary("mul_forgets_null", mul_forgets_null);
    std::fprintf(stderr, "%s\n", r.message.c_str());
    return r.ok ? 0 : 3;
  });
  INFO(c.err);
  CHECK(c.status != 0);
  if (kAsan) {  // the sanitizers report it first: UBSan the null load, or ASan the SEGV
    CHECK_THAT(c.err, Catch::Contains("load of null pointer") || Catch::Contains("SEGV"));
  } else {
    CHECK(c.status == 128 + SIGSEGV);
    CHECK_THAT(c.err, Catch::StartsWith("gradcheck 'mul_forgets_null': crashed in the variant with input 0 a constant "
                                        "(tape.constant): a backward that writes din[0] without checking it for null"));
  }
}

TEST_CASE("custom op: assigning instead of accumulating is caught by the pre-filled variant, one input or two", "[op][custom][gradcheck]") {
  const GradcheckResult r = check_binary("mul_assigns", mul_assigns);
  CHECK_FALSE(r.ok);
  CHECK(r.variant == "input 0's gradient pre-filled");
  CHECK_THAT(r.message, Catch::StartsWith("gradcheck 'mul_assigns' FAILED (variant: input 0's gradient pre-filled) for "
                                          "input 0 (3,4) at index (") &&
                            Catch::EndsWith("does backward assign its input's gradient with = instead of accumulating "
                                            "with +=?"));
  // One input: no aliased pair exists, so before this variant the mistake passed.
  const GradcheckResult one = gradcheck(
      "triple_assigns", [](Tape<double>&, std::span<const Var<double>> in) { return triple_assigns(in[0]); },
      {randn({4}, 6)});
  CHECK_FALSE(one.ok);
  CHECK(one.variant == "input 0's gradient pre-filled");
  // The gradient it gives is 3 u alone, where 3 u + c is right: the message shows both parts.
  CHECK_THAT(one.message, Catch::Contains("from another use of the input, whose backward ran first"));
}

TEST_CASE("custom op: a closure into the builder's returned frame is caught (gradcheck, or ASan)", "[op][custom]") {
  const ChildResult c = run_in_child([] {
    const GradcheckResult r = gradcheck(
        "scale_by_reference",
        [](Tape<double>&, std::span<const Var<double>> in) { return scale_by_reference(in[0], 2.0); }, {randn({5}, 3)});
    std::fprintf(stderr, "%s\n", r.message.c_str());
    return r.ok ? 0 : 3;
  });
  INFO(c.err);
  if (kAsan) {
    CHECK_THAT(c.err, Catch::Contains("stack-use-after-return"));
  } else {
    CHECK(c.status == 3);
    CHECK_THAT(c.err, Catch::StartsWith("gradcheck 'scale_by_reference' FAILED (variant: after return) for input 0 "
                                        "'input0' (5) at index (0): the gradient is") &&
                          Catch::Contains("with the dead stack overwritten by two different patterns") &&
                          Catch::Contains("a backward closure reads a local of the function that built the graph") &&
                          !Catch::Contains("not repeatable"));
  }
}

TEST_CASE("gradcheck: custom op scaled_exp (two inputs, with every variant)", "[op][custom][gradcheck]") {
  const GradcheckResult r = gradcheck(
      "scaled_exp", [](Tape<double>&, std::span<const Var<double>> in) { return scaled_exp(in[0], in[1]); },
      {randn({3, 4}, 4), randn({3, 4}, 5)});
  require_gradcheck(r, 1e-6);
  CHECK(r.variants_run == 5);
  CHECK_THAT(r.message, Catch::EndsWith("; 5 variant(s) pass: input 0 constant, input 1 constant, input 0's gradient "
                                        "pre-filled, input 1's gradient pre-filled, inputs 0 and 1 aliased"));
}

TEST_CASE("gradcheck: custom op scale_saved (a forward temporary kept with save())", "[op][custom][gradcheck]") {
  const GradcheckResult r = gradcheck(
      "scale_saved", [](Tape<double>&, std::span<const Var<double>> in) { return scale_saved(in[0], 2.0); },
      {randn({5}, 3)});
  require_gradcheck(r, 1e-9);
}

TEST_CASE("custom op: an input that needs a gradient but has no rule, and bad shapes, are named", "[op][custom][errors]") {
  Tape<double> tape;
  Parameter<double> a("a", randn({2, 3}, 1)), b("b", randn({2, 3}, 2)), c("c", randn({3}, 3));
  const auto missing_rule = [&] {
    CustomOp<double> op("half_done", {tape.param(a), tape.param(b)}, Shape{2, 3});
    op.grad(0, [](const double*, double*) {});
    return op.finish();
  };
  REQUIRE_THROWS_WITH(missing_rule(), "half_done: input 1 needs a gradient but has no rule: call grad(1, [=](const T* "
                                      "dy, T* dx) { ... }) before finish()");
  REQUIRE_THROWS_WITH(scaled_exp(tape.param(a), tape.param(c)),
                      "scaled_exp: input 0 has shape (2,3) but input 1 has (3) (they must be equal)");
  // An input that needs no gradient needs no rule.
  CustomOp<double> op("first_only", {tape.param(a), tape.constant(c.value().view())}, Shape{2, 3});
  op.grad(0, [](const double*, double*) {});
  CHECK(op.finish().requires_grad());
}

TEST_CASE("custom op: float32 and float64 agree", "[op][custom]") {
  require_precisions_agree([](auto&, auto in) { return scaled_exp(in[0], in[1]); },
                           {randn({4, 5}, 9), randn({4, 5}, 10, 0.3)}, 1e-5);
}
