#include <cmath>
#include <limits>

#include "support.h"
#include "tapegrad/rows.h"

using namespace tapegrad;

TEST_CASE("rows: argmax and top-k over the last dimension, ties to the lower index, NaN never hidden", "[rows]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // (2, 2, 4): four rows.
  const Tensor<float> x = Tensor<float>::from({0.5f, 2.f, -1.f, 2.f,   //
                                               3.f, 1.f, 2.f, 0.f,     //
                                               -4.f, -3.f, -2.f, -1.f,  //
                                               1.f, nan, 7.f, 1.f},
                                              {2, 2, 4});
  CHECK(argmax_rows<float>(x.view()) == std::vector<int32_t>{1, 0, 3, 1});
  const TopK<float> t = topk_rows<float>(x.view(), 2);
  CHECK(t.indices == std::vector<int32_t>{1, 3, 0, 2, 3, 2, 1, 2});
  CHECK(t.values[0] == 2.f);
  CHECK(t.values[3] == 2.f);
  CHECK(t.values[5] == -2.f);
  CHECK(std::isnan(t.values[6]));
  CHECK(t.values[7] == 7.f);
  const TopK<double> all = topk_rows<double>(Tensor<double>::from({3, 1, 2}, {3}).view(), 3);
  CHECK(all.values == std::vector<double>{3, 2, 1});
  CHECK_THROWS_WITH(topk_rows<float>(x.view(), 5), "topk_rows: k must be in [1, 4] (the row length), got 5");
  CHECK_THROWS_WITH(topk_rows<float>(x.view(), 0), "topk_rows: k must be in [1, 4] (the row length), got 0");
}
