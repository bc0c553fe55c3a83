#include "tapegrad/shape.h"

#include <ostream>

#include "tapegrad/error.h"

namespace tapegrad {

Shape::Shape(std::initializer_list<int64_t> dims) {
  for (int64_t d : dims) push_back(d);
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[i];
  return n;
}

void Shape::push_back(int64_t d) {
  // The shape as it would be, for the messages: "(2,3)" + 4 reads "(2,3,4)".
  const auto grown = [&] {
    std::string s = str();
    s.insert(s.size() - 1, (rank_ ? "," : "") + std::to_string(d));
    return s;
  };
  check(rank_ < kMaxRank, "shape: ", grown(), " has rank ", rank_ + 1, "; at most ", kMaxRank, " is supported");
  check(d >= 0, "shape: negative dimension ", d, " in ", grown());
  // numel() never overflows: a shape whose element count would is refused here.
  int64_t n = 0;
  check(!__builtin_mul_overflow(numel(), d, &n) && n <= kMaxElements, "shape: ", grown(),
        " would hold more than 2^60 elements");
  dims_[rank_++] = d;
}

Shape Shape::drop_front(int count) const {
  check(count >= 0 && count <= rank_, "shape: cannot drop ", count, " dims of ", str());
  Shape s;
  for (int i = count; i < rank_; ++i) s.push_back(dims_[i]);
  return s;
}

bool Shape::ends_with(const Shape& suffix) const {
  if (suffix.rank_ > rank_) return false;
  for (int i = 1; i <= suffix.rank_; ++i)
    if (dims_[rank_ - i] != suffix.dims_[suffix.rank_ - i]) return false;
  return true;
}

int Shape::normalize(int i) const {
  const int j = i < 0 ? i + rank_ : i;
  check(j >= 0 && j < rank_, "shape: dimension ", i, " out of range for ", str());
  return j;
}

bool Shape::operator==(const Shape& o) const {
  if (rank_ != o.rank_) return false;
  for (int i = 0; i < rank_; ++i)
    if (dims_[i] != o.dims_[i]) return false;
  return true;
}

std::string Shape::str() const {
  std::string s = "(";
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ',';
    s += std::to_string(dims_[i]);
  }
  return s + ")";
}

std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.str(); }

}  // namespace tapegrad
