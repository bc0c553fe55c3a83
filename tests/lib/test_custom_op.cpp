// The README's "defining an op" example, kept compiling and correct.
#include "support.h"

using namespace tapegrad;

namespace {
template <typename T>
Var<T> cube(Var<T> x) {  // y = x^3  =>  dx = 3 x^2 dy
  Tape<T>& tape = x.tape();
  Var<T> y = tape.make_output("cube", x.shape(), {x});
  const int64_t n = x.shape().numel();
  const T* xd = x.data();
  for (int64_t i = 0; i < n; ++i) y.data()[i] = xd[i] * xd[i] * xd[i];
  tape.record("cube", {x}, y, [xd, n](const T* dy, T* const* dx) {
    for (int64_t i = 0; i < n; ++i) dx[0][i] += 3 * xd[i] * xd[i] * dy[i];  // += : accumulate
  });
  return y;
}
}  // namespace

TEST_CASE("gradcheck: cube (the README's custom op)", "[op][gradcheck]") {
  Rng rng(1);
  auto r = gradcheck("cube", [](Tape<double>&, std::span<const Var<double>> in) { return cube(in[0]); },
                     {Tensor<double>::randn({3, 5}, rng)});
  INFO(r.message);
  REQUIRE(r.ok);
  CHECK(r.max_rel_error < 1e-6);
}
