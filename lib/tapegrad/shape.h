// Shape of a contiguous row-major tensor: rank 0 (a scalar, as a loss is) up to rank 4, e.g.
// (B, NH, T, HS). A plain value type; no heap memory.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>

namespace tapegrad {

class Shape {
 public:
  static constexpr int kMaxRank = 4;
  static constexpr int64_t kMaxElements = int64_t{1} << 60;  // so byte counts fit in 64 bits too

  Shape() = default;  // rank 0: a scalar
  Shape(std::initializer_list<int64_t> dims);
  template <typename It>
  static Shape from_range(It first, It last) {
    Shape s;
    for (; first != last; ++first) s.push_back(static_cast<int64_t>(*first));
    return s;
  }

  int rank() const { return rank_; }
  int64_t numel() const;
  // Python-style index: -1 is the last dimension. Throws on an out-of-range index.
  int64_t operator[](int i) const { return dims_[normalize(i)]; }
  int64_t& operator[](int i) { return dims_[normalize(i)]; }
  int64_t last() const { return rank_ == 0 ? 1 : dims_[rank_ - 1]; }
  // Product of all but the last dimension: the number of rows a last-dim op iterates over.
  // The product of every dim but the last: multiplied, not numel() / last() (a last dim of 0
  // would divide by zero; (2, 0, 4) has 0 rows, (0,) one row of no elements).
  int64_t rows() const {
    int64_t r = 1;
    for (int i = 0; i + 1 < rank_; ++i) r *= dims_[i];
    return r;
  }
  const int64_t* begin() const { return dims_.data(); }
  const int64_t* end() const { return dims_.data() + rank_; }

  void push_back(int64_t d);
  // The shape with dimension i removed / with the leading `count` dims removed.
  Shape drop_front(int count) const;
  // True when `suffix` equals the trailing dims of this shape, e.g. (C) of (B,T,C).
  bool ends_with(const Shape& suffix) const;
  int normalize(int i) const;  // maps -1 to rank-1 etc.; throws when out of range

  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }
  std::string str() const;  // "(2,3,4)", "()" for a scalar

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

std::ostream& operator<<(std::ostream& os, const Shape& s);

}  // namespace tapegrad
