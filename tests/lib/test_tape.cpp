#include "support.h"
#include "tapegrad/ops.h"

using namespace tapegrad;
using namespace tapegrad::testing;

namespace {
// loss = sum(gelu(x @ w) * x @ w): a small graph with fan-out at the matmul output.
Var<double> small_graph(Tape<double>& tape, Parameter<double>& x, Parameter<double>& w) {
  Var<double> h = matmul(tape.param(x), tape.param(w));
  return sum(mul(gelu(h), h));
}
}  // namespace

TEST_CASE("tape: backward of a chain gives the hand-derived gradient", "[tape]") {
  // y = sum(3 * (a * b)) => dy/da = 3b, dy/db = 3a.
  Tape<double> tape;
  Parameter<double> a("a", Tensor<double>::from({1, 2}, {2})), b("b", Tensor<double>::from({5, -1}, {2}));
  Var<double> va = tape.param(a), vb = tape.param(b);
  Var<double> y = sum(scale(mul(va, vb), 3.0));
  CHECK_THAT(y.value(), AllClose<double>({9}));
  tape.backward(y);
  CHECK_THAT(a.grad().view(), AllClose<double>({15, -3}));
  CHECK_THAT(b.grad().view(), AllClose<double>({3, 6}));
  CHECK(tape.num_nodes() == 3);
  CHECK(tape.dump() == "%2 = mul(%0, %1) (2)\n%3 = scale(%2) (2)\n%4 = sum(%3) ()\n");
}

TEST_CASE("tape: intermediate values expose their gradient after backward", "[tape]") {
  Tape<double> tape;
  Parameter<double> a("a", Tensor<double>::from({1, 2}, {2}));
  Var<double> h = scale(tape.param(a), 2.0);
  tape.backward(sum(mul(h, h)));
  CHECK_THAT(h.grad(), AllClose<double>({4, 8}));  // d sum(h^2) / dh = 2h
}

TEST_CASE("tape: parameter gradients accumulate across passes until zero_grad", "[tape]") {
  Tape<double> tape;
  Parameter<double> a("a", Tensor<double>::from({1, 2}, {2}));
  for (int pass = 0; pass < 2; ++pass) {
    tape.clear();
    tape.backward(sum(scale(tape.param(a), 5.0)));
  }
  CHECK_THAT(a.grad().view(), AllClose<double>({10, 10}));
  a.zero_grad();
  tape.clear();
  tape.backward(sum(scale(tape.param(a), 5.0)));
  CHECK_THAT(a.grad().view(), AllClose<double>({5, 5}));
}

TEST_CASE("tape: a no-grad scope computes values and records nothing", "[tape]") {
  Tape<double> tape;
  Parameter<double> x("x", Tensor<double>::from({1, 2, 3, 4}, {2, 2}));
  Parameter<double> w("w", Tensor<double>::from({1, 0, 0, 1}, {2, 2}));
  Var<double> loss;
  {
    auto guard = tape.no_grad();
    loss = small_graph(tape, x, w);
    CHECK_FALSE(tape.grad_enabled());
  }
  CHECK(tape.grad_enabled());
  CHECK(tape.num_nodes() == 0);
  CHECK_FALSE(loss.requires_grad());
  CHECK(loss.value()[0] > 0);
  REQUIRE_THROWS_WITH(tape.backward(loss), Catch::Contains("does not require grad"));
}

TEST_CASE("tape: misuse is reported clearly", "[tape][errors]") {
  Tape<double> tape, other;
  Parameter<double> x("x", Tensor<double>::from({1, 2, 3, 4}, {2, 2}));
  Parameter<double> w("w", Tensor<double>::from({1, 0, 0, 1}, {2, 2}));
  Var<double> loss = small_graph(tape, x, w);
  tape.backward(loss);

  SECTION("backward twice on a consumed tape") {
    REQUIRE_THROWS_WITH(tape.backward(loss), Catch::Contains("already used by backward()"));
  }
  SECTION("a Var used after clear()") {
    tape.clear();
    REQUIRE_THROWS_WITH(gelu(loss), Catch::Contains("stale value"));
  }
  SECTION("operands from two tapes") {
    Var<double> a = other.param(x);
    REQUIRE_THROWS_WITH(matmul(a, tape.param(w)), Catch::Contains("different tapes"));
  }
  SECTION("backward of a non-scalar without an upstream gradient") {
    tape.clear();
    Var<double> h = matmul(tape.param(x), tape.param(w));
    REQUIRE_THROWS_WITH(tape.backward(h), Catch::Contains("must have one element, got shape (2,2)"));
  }
  SECTION("an upstream gradient of the wrong shape") {
    tape.clear();
    Var<double> h = matmul(tape.param(x), tape.param(w));
    const Tensor<double> dy(Shape{4});
    REQUIRE_THROWS_WITH(tape.backward(h, dy.view()), Catch::Contains("upstream gradient shape (4) differs"));
  }
  SECTION("an undefined Var") {
    Var<double> undefined;
    REQUIRE_THROWS_WITH(undefined.shape(), Catch::Contains("undefined Var"));
  }
}

TEST_CASE("tape: cleared and re-recorded, it reuses its arena (no new blocks)", "[tape]") {
  Tape<double> tape;
  Rng rng(1);
  Parameter<double> x("x", Tensor<double>::randn({64, 32}, rng));
  Parameter<double> w("w", Tensor<double>::randn({32, 48}, rng));
  for (int step = 0; step < 3; ++step) {
    tape.clear();
    tape.backward(small_graph(tape, x, w));
  }
  const int64_t blocks = tape.arena().heap_allocations();
  const auto capacity = tape.arena().capacity();
  for (int step = 0; step < 10; ++step) {
    tape.clear();
    tape.backward(small_graph(tape, x, w));
  }
  CHECK(tape.arena().heap_allocations() == blocks);
  CHECK(tape.arena().capacity() == capacity);
}

TEST_CASE("tape: every backward closure is served the same workspace, only while it runs", "[tape]") {
  // Two nodes y = 2x, z = 3y whose closures stage dout in workspace before adding it in: both
  // must be handed the same memory (that is what keeps it warm from one layer to the next), and
  // the staged values must give the right gradient.
  Tape<double> tape;
  Parameter<double> x("x", Tensor<double>::from({1, -2, 3}, {3}));
  std::vector<const double*> served;
  const auto scaled = [&](Var<double> in, double factor) {
    Var<double> out = tape.make_output("scaled", in.shape(), {in});
    for (int64_t i = 0; i < 3; ++i) out.data()[i] = factor * in.data()[i];
    tape.record("scaled", {in}, out, [&tape, &served, factor](const double* dout, double* const* din) {
      double* staged = tape.workspace<double>(3);
      served.push_back(staged);
      for (int64_t i = 0; i < 3; ++i) staged[i] = factor * dout[i];
      for (int64_t i = 0; i < 3; ++i) din[0][i] += staged[i];
    });
    return out;
  };
  for (int step = 0; step < 3; ++step) {
    tape.clear();
    x.grad().fill(0);
    tape.backward(sum(scaled(scaled(tape.param(x), 2.0), 3.0)));
    CHECK_THAT(x.grad().view(), AllClose<double>({6, 6, 6}));
  }
  REQUIRE(served.size() == 6);
  for (const double* p : served) CHECK(p == served[0]);
  // Outside a closure there is no workspace: forward buffers come from scratch().
  CHECK_THROWS_WITH(tape.workspace<double>(3), Catch::Matchers::Contains("only a backward closure"));
}

TEST_CASE("tape: while backward runs, ops record no node and clear() is refused", "[tape][errors]") {
  // A closure (or a hook) that computes on the tape mid-pass: 200 ops on a parameter, each of
  // which would append a node and, as the vector grows, move it under the pass walking it.
  Tape<double> tape;
  Parameter<double> x("x", Tensor<double>::from({1, -2, 3}, {3}));
  bool clear_in_pass = false;
  const auto probe = [&](Var<double> in) {
    Var<double> out = tape.make_output("probe", in.shape(), {in});
    for (int64_t i = 0; i < 3; ++i) out.data()[i] = in.data()[i];
    tape.record("probe", {in}, out, [&, in](const double* dout, double* const* din) {
      CHECK_FALSE(tape.grad_enabled());
      for (int k = 0; k < 200; ++k) {
        Var<double> v = scale(tape.param(x), 2.0);
        CHECK_FALSE(v.requires_grad());
        CHECK(v.value()[2] == 6.0);
      }
      if (clear_in_pass) tape.clear();
      for (int64_t i = 0; i < 3; ++i) din[0][i] += dout[i];
    });
    return out;
  };
  Var<double> loss = sum(scale(probe(tape.param(x)), 3.0));
  const int64_t nodes = tape.num_nodes();
  tape.backward(loss);
  CHECK(tape.num_nodes() == nodes);
  CHECK(tape.grad_enabled());  // restored after the pass
  CHECK_THAT(x.grad().view(), AllClose<double>({3, 3, 3}));

  tape.clear();
  clear_in_pass = true;
  loss = sum(probe(tape.param(x)));
  REQUIRE_THROWS_WITH(tape.backward(loss), "clear: this tape is running backward() (clear() was called from a backward "
                                           "closure or hook); clear it after backward() returns");
  CHECK(tape.grad_enabled());
  tape.clear();  // after the pass: allowed
  clear_in_pass = false;
  x.zero_grad();
  tape.backward(sum(probe(tape.param(x))));
  CHECK_THAT(x.grad().view(), AllClose<double>({1, 1, 1}));
}

TEST_CASE("tape: retain_intermediate_grads(false) gives the same parameter gradients in less memory", "[tape]") {
  // A chain of 12 GELU layers with fan-out at every matmul (small_graph's shape, stacked): each
  // value's gradient is dead once its op's backward has run, so the tape may reuse it.
  Rng rng(3);
  Parameter<double> x("x", Tensor<double>::randn({16, 24}, rng));
  Parameter<double> w("w", Tensor<double>::randn({24, 24}, rng, 0.3));
  Var<double> leaf;
  const auto run = [&](bool retain, Tape<double>& tape) {
    tape.retain_intermediate_grads(retain);
    x.grad().fill(0), w.grad().fill(0);
    Var<double> h = leaf = tape.param(x), first;
    for (int layer = 0; layer < 12; ++layer) {
      Var<double> z = matmul(h, tape.param(w));
      h = add(gelu(z), scale(z, 0.5));
      if (layer == 0) first = h;
    }
    tape.backward(sum(mul(h, h)));
    return first;
  };
  Tape<double> kept, recycled;
  const Var<double> first_kept = run(true, kept);
  const std::vector<double> dx(x.grad().data(), x.grad().data() + x.grad().numel());
  const std::vector<double> dw(w.grad().data(), w.grad().data() + w.grad().numel());
  const Var<double> first_recycled = run(false, recycled);
  // Bitwise: the same sums in the same order, only in other buffers.
  CHECK(std::equal(dx.begin(), dx.end(), x.grad().data()));
  CHECK(std::equal(dw.begin(), dw.end(), w.grad().data()));
  CHECK(recycled.arena().peak_bytes() < kept.arena().peak_bytes() * 3 / 4);
  CHECK(kept.grad(first_kept).numel() == 16 * 24);
  CHECK_THROWS_WITH(recycled.grad(first_recycled), Catch::Matchers::Contains("retain_intermediate_grads(false)"));
  CHECK(recycled.grad(leaf).data() == x.grad().data());  // leaves keep theirs

  // The caller's upstream gradient is the output's gradient, not the tape's to reuse: it must
  // come out of backward() as it went in, though values of its size are released after it.
  Tape<double> tape;
  tape.retain_intermediate_grads(false);
  Var<double> z = matmul(tape.param(x), tape.param(w));
  Var<double> y = mul(gelu(gelu(z)), z);  // the inner gelu's input gradient comes after y's release
  const Tensor<double> upstream = Tensor<double>::randn({16, 24}, rng);
  const Tensor<double> before = upstream;
  tape.backward(y, upstream.view());
  CHECK(std::equal(before.data(), before.data() + before.numel(), upstream.data()));
}

TEST_CASE("parameter: value() and grad() are methods, as a Var's value() and grad()", "[tape][api]") {
  // One spelling for the same concept (a library user wrote p.value after v.value() and failed).
  static_assert(std::is_same_v<decltype(std::declval<Parameter<float>&>().value()), Tensor<float>&>);
  static_assert(std::is_same_v<decltype(std::declval<const Parameter<float>&>().grad()), const Tensor<float>&>);
  Parameter<double> p("p", Tensor<double>::from({1.5, -2.0}, {2}));
  Tape<double> tape;
  const Var<double> v = tape.param(p);
  tape.backward(sum(mul(v, v)));
  CHECK(p.value()[1] == v.value()[1]);
  CHECK(p.grad()[0] == 3.0);  // d/dp sum p^2 = 2 p
  CHECK(p.grad()[1] == -4.0);
}
