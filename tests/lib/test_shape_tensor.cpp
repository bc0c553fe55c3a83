#include <sstream>

#include "support.h"
#include "tapegrad/buffer.h"
#include "tapegrad/random.h"
#include "tapegrad/tensor.h"

using namespace tapegrad;
using namespace tapegrad::testing;

TEST_CASE("shape: rank, numel, negative indices, printing", "[tensor]") {
  const Shape s{2, 3, 4};
  CHECK(s.rank() == 3);
  CHECK(s.numel() == 24);
  CHECK(s[-1] == 4);
  CHECK(s.rows() == 6);
  // rows() multiplies the leading dims: a last dim of 0 is not a division by zero (SIGFPE).
  CHECK(Shape{2, 0}.rows() == 2);
  CHECK(Shape{0}.rows() == 1);
  CHECK(Shape{2, 0, 4}.rows() == 0);
  CHECK(Shape{}.rows() == 1);
  CHECK(s.str() == "(2,3,4)");
  CHECK(Shape{}.numel() == 1);
  CHECK(Shape{}.str() == "()");
  CHECK(s.ends_with(Shape{3, 4}));
  CHECK_FALSE(s.ends_with(Shape{2, 4}));
  REQUIRE_THROWS_WITH((Shape{1, 2, 3, 4, 5}), Catch::Contains("at most 4 is supported"));
  REQUIRE_THROWS_WITH(s[3], Catch::Contains("dimension 3 out of range for (2,3,4)"));
}

TEST_CASE("tensor: construction, element access, views without copies", "[tensor]") {
  auto t = Tensor<float>::from({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(t.at(1, 2) == 6);
  TensorView<float> v = t.view({3, 2});
  CHECK(v.data() == t.data());
  CHECK(v.at(2, 1) == 6);
  v.at(0, 0) = 10;
  CHECK(t[0] == 10);
  REQUIRE_THROWS_WITH(t.view({4, 2}), Catch::Contains("cannot view (2,3) (6 elements) as (4,2)"));
  REQUIRE_THROWS_WITH(t.at(2, 0), Catch::Contains("index 2 out of range for dim 0 of (2,3)"));
  REQUIRE_THROWS_WITH(Tensor<float>::from({1, 2, 3}, {2, 2}), Catch::Contains("3 values do not fill shape (2,2)"));
}

TEST_CASE("tensor: copies are deep (a copy never aliases)", "[tensor]") {
  auto a = Tensor<double>::from({1, 2}, {2});
  Tensor<double> b = a;
  b[0] = 5;
  CHECK(a[0] == 1);
  CHECK(a.cast<float>()[1] == 2.0f);
}

TEST_CASE("tensor: printing shows the shape and elides long dims", "[tensor]") {
  std::ostringstream os;
  os << Tensor<float>::from({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(os.str() == "tensor(shape=(2,3), [[1, 2, 3],\n        [4, 5, 6]])");
  std::ostringstream longer;
  Tensor<float> t(Shape{10});
  for (int i = 0; i < 10; ++i) t[i] = static_cast<float>(i);
  longer << t;
  CHECK(longer.str() == "tensor(shape=(10), [0, 1, 2, ..., 7, 8, 9])");
}

TEST_CASE("rng: seeded streams are reproducible and N(0,1) has the right moments", "[tensor]") {
  Rng a(42), b(42), c(43);
  CHECK(a.next_u64() == b.next_u64());
  CHECK(a.next_u64() != c.next_u64());
  // Pinned: the generator is part of the checkpoint format; its stream must never change.
  Rng pinned(1);
  CHECK(pinned.next_u64() == 0xb3f2af6d0fc710c5ULL);
  Rng r(7);
  double s = 0, s2 = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double x = r.normal();
    s += x;
    s2 += x * x;
  }
  CHECK(std::abs(s / n) < 0.01);
  CHECK(std::abs(s2 / n - 1) < 0.01);
}

TEST_CASE("shape: an element count that would overflow is refused, naming the shape", "[shape][errors]") {
  Shape s{int64_t{1} << 32};
  REQUIRE_THROWS_WITH(s.push_back(int64_t{1} << 32), "shape: (4294967296,4294967296) would hold more than 2^60 elements");
  REQUIRE_THROWS_WITH((Shape{int64_t{1} << 30, int64_t{1} << 30, 2}),
                      "shape: (1073741824,1073741824,2) would hold more than 2^60 elements");
  // The other refusals name the shape as it would have been, too.
  REQUIRE_THROWS_WITH((Shape{2, -3}), "shape: negative dimension -3 in (2,-3)");
  REQUIRE_THROWS_WITH((Shape{1, 2, 3, 4, 5}), "shape: (1,2,3,4,5) has rank 5; at most 4 is supported");
  REQUIRE_THROWS_WITH((Shape{-1}), "shape: negative dimension -1 in (-1)");
  CHECK((Shape{int64_t{1} << 30, int64_t{1} << 30}).numel() == int64_t{1} << 60);
  CHECK((Shape{0, int64_t{1} << 62}).numel() == 0);
}

TEST_CASE("buffers: every live buffer is counted, and one the machine cannot hold is an Error, not the OOM killer",
          "[tensor][buffer]") {
  const int64_t before = buffer_bytes_live();
  {
    Tensor<float> t(Shape{1000, 1000});
    CHECK(buffer_bytes_live() - before >= 4000000);        // its bytes
    CHECK(buffer_bytes_live() - before <= 4000000 + 128);  // and one header line, an offset below it
  }
  CHECK(buffer_bytes_live() == before);  // counted back on release
  // More than 90 % of the machine: refused before any page is touched, and nothing stays counted.
  const int64_t too_many = buffer_bytes_limit() / 4 + 1;  // floats
  CHECK_THROWS_WITH(Tensor<float>(Shape{too_many}), Catch::StartsWith("cannot allocate ") &&
                                                        Catch::Contains("90 % of this machine's memory"));
  CHECK(buffer_bytes_live() == before);
}
