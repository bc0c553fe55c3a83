#include <algorithm>
#include <set>

#include "support.h"
#include "tapegrad/data_loader.h"

using namespace tapegrad;

namespace {
// 10 rows of 3 features; row r holds r, r + 0.25, r + 0.5, and label 100 + r.
DataLoader<float> ten_rows(DataLoaderOptions o) {
  Tensor<float> x(Shape{10, 3});
  std::vector<int32_t> labels;
  for (int r = 0; r < 10; ++r) {
    for (int j = 0; j < 3; ++j) x.data()[r * 3 + j] = static_cast<float>(r) + 0.25f * static_cast<float>(j);
    labels.push_back(100 + r);
  }
  return DataLoader<float>(std::move(x), std::move(labels), o);
}

// The rows of one epoch, in the order drawn, and the batch sizes.
std::pair<std::vector<int>, std::vector<int64_t>> one_epoch(DataLoader<float>& loader) {
  std::vector<int> rows;
  std::vector<int64_t> sizes;
  for (const auto& b : loader.epoch()) {
    sizes.push_back(b.inputs.shape()[0]);
    REQUIRE(b.inputs.shape()[1] == 3);
    for (int64_t i = 0; i < b.inputs.shape()[0]; ++i) {
      const int r = static_cast<int>(b.inputs.data()[i * 3]);
      CHECK(b.inputs.data()[i * 3 + 2] == static_cast<float>(r) + 0.5f);  // whole rows
      CHECK(b.labels[static_cast<size_t>(i)] == 100 + r);                 // labels follow their rows
      rows.push_back(r);
    }
  }
  return {rows, sizes};
}
}  // namespace

TEST_CASE("data loader: every row once per epoch, in batches, shuffled by its seed, labels with their rows", "[data]") {
  auto loader = ten_rows({.batch_size = 4, .shuffle = true, .seed = 7});
  CHECK(loader.batches_per_epoch() == 3);
  const auto [first, sizes] = one_epoch(loader);
  CHECK(sizes == std::vector<int64_t>{4, 4, 2});  // the last short batch kept
  std::vector<int> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(first != sorted);  // shuffled
  const auto second = one_epoch(loader).first;
  CHECK(second != first);  // a new order each epoch
  CHECK(loader.epochs_started() == 2);
  auto again = ten_rows({.batch_size = 4, .shuffle = true, .seed = 7});
  CHECK(one_epoch(again).first == first);  // the same seed, the same batches
  auto other = ten_rows({.batch_size = 4, .shuffle = true, .seed = 8});
  CHECK(one_epoch(other).first != first);

  auto in_order = ten_rows({.batch_size = 4, .shuffle = false, .drop_last = true});
  CHECK(in_order.batches_per_epoch() == 2);
  const auto [rows, kept] = one_epoch(in_order);
  CHECK(kept == std::vector<int64_t>{4, 4});  // the short batch dropped
  CHECK(rows == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
}

TEST_CASE("data loader: inputs without labels, and refusals that name the sizes", "[data][errors]") {
  DataLoader<double> plain(Tensor<double>(Shape{5, 2}), {.batch_size = 2});
  DataLoader<double>::Batch b;
  int n = 0;
  while (plain.next(b)) {
    ++n;
    CHECK(b.labels.empty());
  }
  CHECK(n == 3);
  CHECK(plain.next(b));  // the next call starts another epoch
  CHECK_THROWS_WITH(DataLoader<float>(Tensor<float>(Shape{4, 2}), std::vector<int32_t>{1, 2, 3}, {}),
                    "DataLoader: 3 labels for 4 rows of inputs (one label per row, or none)");
  CHECK_THROWS_WITH(DataLoader<float>(Tensor<float>(Shape{4, 2}), {.batch_size = 0}),
                    "DataLoader: batch_size must be positive, got 0");
  CHECK_THROWS_WITH(DataLoader<float>(Tensor<float>(Shape{}), {}),
                    Catch::StartsWith("DataLoader: the inputs need at least one row"));
}
