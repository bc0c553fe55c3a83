#include "tapegrad/tensor.h"

#include <algorithm>
#include <ostream>

#include "tapegrad/random.h"

namespace tapegrad {

template <typename T>
int64_t TensorView<T>::offset(std::initializer_list<int64_t> idx) const {
  check(static_cast<int>(idx.size()) == shape_.rank(), "at: ", idx.size(),
        " indices for a tensor of shape ", shape_);
  int64_t off = 0;
  int d = 0;
  for (int64_t i : idx) {
    check(i >= 0 && i < shape_[d], "at: index ", i, " out of range for dim ", d, " of ", shape_);
    off = off * shape_[d] + i;
    ++d;
  }
  return off;
}

template <typename T>
Tensor<T>::Tensor(Shape shape, T fill) : storage_(static_cast<size_t>(shape.numel()), fill), shape_(shape) {}

template <typename T>
Tensor<T> Tensor<T>::from(std::initializer_list<T> values, Shape shape) {
  return from(std::span<const T>(values.begin(), values.size()), shape);
}

template <typename T>
Tensor<T> Tensor<T>::from(std::span<const T> values, Shape shape) {
  check(static_cast<int64_t>(values.size()) == shape.numel(), "tensor: ", values.size(),
        " values do not fill shape ", shape, " (", shape.numel(), " elements)");
  Tensor t(shape);
  std::copy(values.begin(), values.end(), t.storage_.begin());
  return t;
}

template <typename T>
Tensor<T> Tensor<T>::randn(Shape shape, Rng& rng, double std, double mean) {
  Tensor t(shape);
  for (auto& v : t.storage_) v = static_cast<T>(mean + std * rng.normal());
  return t;
}

template <typename T>
Tensor<T> Tensor<T>::uniform(Shape shape, Rng& rng, double lo, double hi) {
  Tensor t(shape);
  for (auto& v : t.storage_) v = static_cast<T>(lo + (hi - lo) * rng.uniform());
  return t;
}

template <typename T>
void Tensor<T>::reshape(Shape shape) {
  check(shape.numel() == numel(), "reshape: cannot reshape ", shape_, " to ", shape);
  shape_ = shape;
}

template <typename T>
void Tensor<T>::fill(T value) {
  std::fill(storage_.begin(), storage_.end(), value);
}

namespace {
// Prints dims [dim, rank) of the block starting at `data`, eliding the middle of long dims.
template <typename T>
void print_block(std::ostream& os, const T* data, const Shape& shape, int dim, int indent) {
  constexpr int64_t kEdge = 3;  // items shown at each end of an elided dimension
  const int64_t n = shape[dim];
  int64_t stride = 1;
  for (int d = dim + 1; d < shape.rank(); ++d) stride *= shape[d];
  os << '[';
  for (int64_t i = 0; i < n; ++i) {
    if (n > 2 * kEdge && i == kEdge) {
      os << (dim + 1 == shape.rank() ? "..., " : "...,\n" + std::string(indent + 1, ' '));
      i = n - kEdge;
    }
    if (dim + 1 == shape.rank()) {
      os << data[i];
    } else {
      print_block(os, data + i * stride, shape, dim + 1, indent + 1);
    }
    if (i + 1 < n) os << (dim + 1 == shape.rank() ? ", " : ",\n" + std::string(indent + 1, ' '));
  }
  os << ']';
}
}  // namespace

template <typename T>
std::ostream& operator<<(std::ostream& os, TensorView<const T> t) {
  os << "tensor(shape=" << t.shape() << ", ";
  if (t.shape().rank() == 0) {
    os << t[0];
  } else {
    print_block(os, t.data(), t.shape(), 0, 7);
  }
  return os << ')';
}

template class TensorView<float>;
template class TensorView<double>;
template class TensorView<const float>;
template class TensorView<const double>;
template class Tensor<float>;
template class Tensor<double>;
template std::ostream& operator<<(std::ostream&, TensorView<const float>);
template std::ostream& operator<<(std::ostream&, TensorView<const double>);

}  // namespace tapegrad
