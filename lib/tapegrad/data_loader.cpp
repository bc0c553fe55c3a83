#include "tapegrad/data_loader.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "tapegrad/error.h"

namespace tapegrad {

template <typename T>
DataLoader<T>::DataLoader(Tensor<T> inputs, std::vector<int32_t> labels, DataLoaderOptions options)
    : inputs_(std::move(inputs)), labels_(std::move(labels)), o_(options), rng_(options.seed) {
  check(inputs_.shape().rank() >= 1 && inputs_.shape()[0] > 0, "DataLoader: the inputs need at least one row, got shape ",
        inputs_.shape().str());
  check(o_.batch_size > 0, "DataLoader: batch_size must be positive, got ", o_.batch_size);
  rows_ = inputs_.shape()[0];
  row_size_ = inputs_.shape().numel() / rows_;
  check(labels_.empty() || static_cast<int64_t>(labels_.size()) == rows_, "DataLoader: ", labels_.size(),
        " labels for ", rows_, " rows of inputs (one label per row, or none)");
  order_.resize(static_cast<size_t>(rows_));
}

template <typename T>
int64_t DataLoader<T>::batches_per_epoch() const {
  return o_.drop_last ? rows_ / o_.batch_size : (rows_ + o_.batch_size - 1) / o_.batch_size;
}

template <typename T>
void DataLoader<T>::start_epoch() {
  std::iota(order_.begin(), order_.end(), int64_t{0});
  if (o_.shuffle)  // Fisher-Yates from the loader's own generator
    for (int64_t i = rows_ - 1; i > 0; --i)
      std::swap(order_[static_cast<size_t>(i)], order_[rng_.below(static_cast<uint64_t>(i) + 1)]);
  cursor_ = 0;
  in_epoch_ = true;
  ++epochs_;
}

template <typename T>
bool DataLoader<T>::next(Batch& out) {
  if (!in_epoch_) start_epoch();
  const int64_t left = rows_ - cursor_;
  const int64_t b = std::min(o_.batch_size, left);
  if (b == 0 || (o_.drop_last && b < o_.batch_size)) {
    in_epoch_ = false;
    return false;
  }
  Shape shape = inputs_.shape();
  shape[0] = b;
  if (out.inputs.shape() != shape) out.inputs = Tensor<T>(shape);
  out.labels.resize(labels_.empty() ? 0 : static_cast<size_t>(b));
  for (int64_t i = 0; i < b; ++i) {
    const int64_t row = order_[static_cast<size_t>(cursor_ + i)];
    std::memcpy(out.inputs.data() + i * row_size_, inputs_.data() + row * row_size_,
                static_cast<size_t>(row_size_) * sizeof(T));
    if (!labels_.empty()) out.labels[static_cast<size_t>(i)] = labels_[static_cast<size_t>(row)];
  }
  cursor_ += b;
  return true;
}

template class DataLoader<float>;
template class DataLoader<double>;

}  // namespace tapegrad
