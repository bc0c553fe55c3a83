#include "tapegrad/hessian.h"

#include <cmath>
#include <vector>

#include "tapegrad/error.h"

namespace tapegrad {

int64_t flat_size(std::span<Parameter<double>* const> params) {
  int64_t n = 0;
  for (const Parameter<double>* p : params) n += p->numel();
  return n;
}

void hessian_vector_product(std::span<Parameter<double>* const> params, const GradientFn& gradient,
                            std::span<const double> v, std::span<double> hv, const HvpOptions& o) {
  const int64_t n = flat_size(params);
  check(static_cast<int64_t>(v.size()) == n && static_cast<int64_t>(hv.size()) == n, "hessian_vector_product: v has ",
        v.size(), " and hv ", hv.size(), " elements, the parameters ", n);
  double w2 = 0, v2 = 0;
  for (const Parameter<double>* p : params)
    for (int64_t i = 0; i < p->numel(); ++i) w2 += p->value()[i] * p->value()[i];
  for (double x : v) v2 += x * x;
  if (v2 == 0) {
    std::fill(hv.begin(), hv.end(), 0.0);
    return;
  }
  const double eps = o.rel_step * (1 + std::sqrt(w2 / static_cast<double>(n))) / std::sqrt(v2);

  std::vector<double> saved(static_cast<size_t>(n)), minus(static_cast<size_t>(n));
  const auto move_to = [&](double sign) {  // w = saved + sign * eps * v
    int64_t k = 0;
    for (Parameter<double>* p : params)
      for (int64_t i = 0; i < p->numel(); ++i, ++k) p->value()[i] = saved[static_cast<size_t>(k)] + sign * eps * v[static_cast<size_t>(k)];
  };
  {
    int64_t k = 0;
    for (const Parameter<double>* p : params)
      for (int64_t i = 0; i < p->numel(); ++i) saved[static_cast<size_t>(k++)] = p->value()[i];
  }
  move_to(+1);
  gradient(hv);
  move_to(-1);
  gradient(minus);
  int64_t k = 0;
  for (Parameter<double>* p : params)  // restore bitwise
    for (int64_t i = 0; i < p->numel(); ++i) p->value()[i] = saved[static_cast<size_t>(k++)];
  for (int64_t i = 0; i < n; ++i) hv[static_cast<size_t>(i)] = (hv[static_cast<size_t>(i)] - minus[static_cast<size_t>(i)]) / (2 * eps);
}

}  // namespace tapegrad
