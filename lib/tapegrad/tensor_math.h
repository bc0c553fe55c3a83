// Eager arithmetic on tensors, outside any tape: what torch does to tensors that need no gradient
// (metrics, masks, data preparation). Element-wise ops follow the tape ops' one broadcasting rule
// (ops/broadcast.h: equal shapes, or one the trailing dims of the other) and return a new tensor
// of the larger shape; a mismatch is an Error naming both shapes.
//   Tensor<float> c = a + b, d = a * 2.0, e = 1.0 - a;
//   const double accuracy = mean(eq(predicted, labels));   // Tensors, views, a Var's value()
#pragma once

#include <concepts>
#include <type_traits>

#include "tapegrad/tensor.h"

namespace tapegrad {

// Every reading of a tensor: Tensor<T>, TensorView<T>, TensorView<const T> (a Var's value()).
template <typename V>
struct tensor_element {};
template <typename T>
struct tensor_element<Tensor<T>> {
  using type = T;
};
template <typename T>
struct tensor_element<TensorView<T>> {
  using type = std::remove_const_t<T>;
};
template <typename V>
concept TensorLike = requires { typename tensor_element<std::remove_cvref_t<V>>::type; };
template <typename V>
using element_t = typename tensor_element<std::remove_cvref_t<V>>::type;
template <TensorLike V>
TensorView<const element_t<V>> read_view(const V& v) {
  return TensorView<const element_t<V>>(v);
}

enum class Elementwise { kAdd, kSub, kMul, kDiv, kEq, kNe, kLt, kLe, kGt, kGe };
enum class Reduction { kSum, kMean, kMin, kMax };
// The two kernels everything below calls (float and double).
template <typename T>
Tensor<T> elementwise(Elementwise op, TensorView<const T> a, TensorView<const T> b);
template <typename T>
double reduce(Reduction op, TensorView<const T> a);
// a * alpha + beta, element-wise (a scalar on either side of +, -, * reduces to it).
template <typename T>
Tensor<T> affine(TensorView<const T> a, double alpha, double beta);

#define TAPEGRAD_ELEMENTWISE(name, op)                                       \
  template <TensorLike A, TensorLike B>                                      \
    requires std::same_as<element_t<A>, element_t<B>>                        \
  Tensor<element_t<A>> name(const A& a, const B& b) {                        \
    return elementwise<element_t<A>>(Elementwise::op, read_view(a), read_view(b)); \
  }
TAPEGRAD_ELEMENTWISE(add, kAdd)
TAPEGRAD_ELEMENTWISE(sub, kSub)
TAPEGRAD_ELEMENTWISE(mul, kMul)
TAPEGRAD_ELEMENTWISE(div, kDiv)
// Comparisons: 1 where the relation holds, 0 elsewhere, in the tensors' own type (a mask to
// multiply by, or to sum to count). NaN compares unequal to everything, itself included (IEEE,
// as torch): only ne holds for it.
TAPEGRAD_ELEMENTWISE(eq, kEq)
TAPEGRAD_ELEMENTWISE(ne, kNe)
TAPEGRAD_ELEMENTWISE(lt, kLt)
TAPEGRAD_ELEMENTWISE(le, kLe)
TAPEGRAD_ELEMENTWISE(gt, kGt)
TAPEGRAD_ELEMENTWISE(ge, kGe)
#undef TAPEGRAD_ELEMENTWISE

// Over every element, accumulated in double. The sum of none is 0 and its mean NaN; min and max
// throw for an empty tensor and are NaN if any element is.
template <TensorLike A>
double sum(const A& a) { return reduce(Reduction::kSum, read_view(a)); }
template <TensorLike A>
double mean(const A& a) { return reduce(Reduction::kMean, read_view(a)); }
template <TensorLike A>
double min(const A& a) { return reduce(Reduction::kMin, read_view(a)); }
template <TensorLike A>
double max(const A& a) { return reduce(Reduction::kMax, read_view(a)); }

template <typename T>
Tensor<T> operator+(const Tensor<T>& a, const Tensor<T>& b) { return add(a, b); }
template <typename T>
Tensor<T> operator-(const Tensor<T>& a, const Tensor<T>& b) { return sub(a, b); }
template <typename T>
Tensor<T> operator*(const Tensor<T>& a, const Tensor<T>& b) { return mul(a, b); }
template <typename T>
Tensor<T> operator/(const Tensor<T>& a, const Tensor<T>& b) { return div(a, b); }
template <typename T>
Tensor<T> operator+(const Tensor<T>& a, double s) { return affine(a.view(), 1.0, s); }
template <typename T>
Tensor<T> operator+(double s, const Tensor<T>& a) { return affine(a.view(), 1.0, s); }
template <typename T>
Tensor<T> operator-(const Tensor<T>& a, double s) { return affine(a.view(), 1.0, -s); }
template <typename T>
Tensor<T> operator-(double s, const Tensor<T>& a) { return affine(a.view(), -1.0, s); }
template <typename T>
Tensor<T> operator*(const Tensor<T>& a, double s) { return affine(a.view(), s, 0.0); }
template <typename T>
Tensor<T> operator*(double s, const Tensor<T>& a) { return affine(a.view(), s, 0.0); }
template <typename T>
Tensor<T> operator-(const Tensor<T>& a) { return affine(a.view(), -1.0, 0.0); }

}  // namespace tapegrad
