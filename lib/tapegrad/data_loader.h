// DataLoader: mini-batches of a dataset held in memory — the rows of an input tensor (first
// dimension N) and, for classification, one int32 label per row — as torch's DataLoader over a
// TensorDataset: shuffled every epoch by its own seeded generator (the same seed, the same
// batches), the last short batch kept or dropped.
//
//   DataLoader<float> loader(x, labels, {.batch_size = 64, .shuffle = true, .seed = 1});
//   for (int epoch = 0; epoch < 10; ++epoch)
//     for (const auto& b : loader.epoch()) { ... b.inputs (B, ...), b.labels (B) ... }
//
// A batch's tensors are reused from one batch to the next (no allocation once the first batch
// of each size is built): copy what must outlive the next batch.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tapegrad/random.h"
#include "tapegrad/tensor.h"

namespace tapegrad {

struct DataLoaderOptions {
  int64_t batch_size = 32;
  bool shuffle = true;      // a new order each epoch
  bool drop_last = false;   // drop the last batch when shorter than batch_size
  uint64_t seed = 0;        // of the shuffling generator
};

template <typename T = float>
class DataLoader {
 public:
  struct Batch {
    Tensor<T> inputs;             // (B, ...): the rows drawn
    std::vector<int32_t> labels;  // (B), empty without labels
  };

  // `labels`, if not empty, holds one label per row of `inputs`. Throws, naming sizes, when they
  // disagree, the input has no rows or batch_size is not positive.
  DataLoader(Tensor<T> inputs, std::vector<int32_t> labels, DataLoaderOptions options);
  explicit DataLoader(Tensor<T> inputs, DataLoaderOptions options) : DataLoader(std::move(inputs), {}, options) {}

  int64_t rows() const { return rows_; }
  int64_t batches_per_epoch() const;
  int64_t epochs_started() const { return epochs_; }

  // The next batch of the current epoch into `out`; false (out untouched) when the epoch is over,
  // and the next call starts a new one (reshuffled).
  bool next(Batch& out);

  // The rest of the current epoch (a whole one when none is under way) as a range:
  // for (const auto& b : loader.epoch()).
  class Epoch;
  Epoch epoch();

 private:
  void start_epoch();

  Tensor<T> inputs_;
  std::vector<int32_t> labels_;
  DataLoaderOptions o_;
  int64_t rows_ = 0, row_size_ = 0;
  std::vector<int64_t> order_;
  int64_t cursor_ = 0, epochs_ = 0;
  bool in_epoch_ = false;
  Rng rng_;
};

template <typename T>
class DataLoader<T>::Epoch {
 public:
  class iterator {
   public:
    const Batch& operator*() const { return epoch_->batch_; }
    iterator& operator++() {
      if (!epoch_->loader_->next(epoch_->batch_)) epoch_ = nullptr;
      return *this;
    }
    bool operator!=(const iterator& o) const { return epoch_ != o.epoch_; }

   private:
    friend class Epoch;
    explicit iterator(Epoch* e) : epoch_(e) {}
    Epoch* epoch_;
  };
  iterator begin() {
    iterator it(this);
    return loader_->next(batch_) ? it : end();
  }
  iterator end() { return iterator(nullptr); }

 private:
  friend class DataLoader;
  explicit Epoch(DataLoader* loader) : loader_(loader) {}
  DataLoader* loader_;
  Batch batch_;
};

template <typename T>
typename DataLoader<T>::Epoch DataLoader<T>::epoch() {
  return Epoch(this);
}

}  // namespace tapegrad
