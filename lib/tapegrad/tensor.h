// Dense row-major tensors of float (training) or double (gradient checks).
//
//   TensorView<T>  non-owning: a pointer and a Shape. Reshaping a view is free (no copy). Use
//                  TensorView<const T> for read-only access; a view of T converts to one of const T.
//   Tensor<T>      owning storage with value semantics: copying a Tensor copies its elements, so a
//                  copy never silently aliases (flashlight's pitfall). Take a view to share.
//
// Elements are contiguous; the last dimension varies fastest. Both templates are instantiated
// for float and double in tensor.cpp.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <span>
#include <type_traits>
#include <vector>

#include "tapegrad/buffer.h"
#include "tapegrad/error.h"
#include "tapegrad/random.h"
#include "tapegrad/shape.h"

namespace tapegrad {

template <typename T>
class TensorView {
 public:
  using value_type = std::remove_const_t<T>;

  TensorView() = default;
  TensorView(T* data, Shape shape) : data_(data), shape_(shape) {}
  // A view of T is also a view of const T.
  template <typename U>
    requires std::is_same_v<const U, T> && (!std::is_same_v<U, T>)
  TensorView(const TensorView<U>& o) : data_(o.data()), shape_(o.shape()) {}

  T* data() const { return data_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return shape_.numel(); }
  int64_t size(int dim) const { return shape_[dim]; }
  std::span<T> span() const { return {data_, static_cast<size_t>(numel())}; }
  T& operator[](int64_t i) const { return data_[i]; }
  // Element at a multi-index: t.at(b, t, c). Bounds are checked (for tests and debugging;
  // kernels use raw pointers).
  template <typename... I>
  T& at(I... idx) const {
    return data_[offset({static_cast<int64_t>(idx)...})];
  }
  // Same elements under another shape with the same number of elements. No copy.
  TensorView view(Shape shape) const {
    check(shape.numel() == numel(), "view: cannot view ", shape_, " (", numel(), " elements) as ",
          shape, " (", shape.numel(), " elements)");
    return {data_, shape};
  }

 private:
  int64_t offset(std::initializer_list<int64_t> idx) const;

  T* data_ = nullptr;
  Shape shape_;
};

template <typename T = float>
class Tensor {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "tapegrad tensors hold float or double");

 public:
  Tensor() = default;
  explicit Tensor(Shape shape, T fill = T(0));
  // Tensor<float>::from({1, 2, 3, 4, 5, 6}, {2, 3})
  static Tensor from(std::initializer_list<T> values, Shape shape);
  static Tensor from(std::span<const T> values, Shape shape);
  static Tensor zeros(Shape shape) { return Tensor(shape); }
  static Tensor full(Shape shape, T value) { return Tensor(shape, value); }
  // Elements drawn from N(mean, std^2) / U[lo, hi) with the given generator.
  static Tensor randn(Shape shape, Rng& rng, double std = 1.0, double mean = 0.0);
  static Tensor uniform(Shape shape, Rng& rng, double lo, double hi);

  T* data() { return storage_.data(); }
  const T* data() const { return storage_.data(); }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return shape_.numel(); }
  int64_t size(int dim) const { return shape_[dim]; }
  T& operator[](int64_t i) { return storage_[i]; }
  const T& operator[](int64_t i) const { return storage_[i]; }
  template <typename... I>
  T& at(I... idx) {
    return view().at(idx...);
  }
  template <typename... I>
  const T& at(I... idx) const {
    return view().at(idx...);
  }
  std::span<T> span() { return storage_; }
  std::span<const T> span() const { return storage_; }

  TensorView<T> view() { return {data(), shape_}; }
  TensorView<const T> view() const { return {data(), shape_}; }
  TensorView<T> view(Shape shape) { return view().view(shape); }
  TensorView<const T> view(Shape shape) const { return view().view(shape); }
  operator TensorView<T>() { return view(); }
  operator TensorView<const T>() const { return view(); }

  // Changes the shape in place (same number of elements). No copy.
  void reshape(Shape shape);
  void fill(T value);
  // Element-wise conversion to the other precision (or a copy in the same one).
  template <typename U>
  Tensor<U> cast() const {
    Tensor<U> out(shape_);
    for (int64_t i = 0; i < numel(); ++i) out[i] = static_cast<U>(storage_[i]);
    return out;
  }
  static Tensor copy_of(TensorView<const T> v) { return from(v.span(), v.shape()); }

 private:
  std::vector<T, BufferAllocator<T>> storage_;  // starts on a 64-byte line (buffer.h)
  Shape shape_;
};

// Debug printing in the spirit of torch: shape then nested rows, long dims elided with "...".
template <typename T>
std::ostream& operator<<(std::ostream& os, TensorView<const T> t);
template <typename T>
std::ostream& operator<<(std::ostream& os, TensorView<T> t) {
  return os << TensorView<const T>(t);
}
template <typename T>
std::ostream& operator<<(std::ostream& os, const Tensor<T>& t) {
  return os << t.view();
}

}  // namespace tapegrad
