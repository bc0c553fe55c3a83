#include "tapegrad/optim/clip.h"

#include <cmath>

#include "tapegrad/vmath.h"

namespace tapegrad {

template <typename T>
double grad_norm(std::span<Parameter<T>* const> params) {
  double sq = 0;  // parameters in order, each summed by one vectorised reduction: deterministic
  for (const Parameter<T>* p : params) sq += vmath::sum_squares(p->grad.data(), p->numel());
  return std::sqrt(sq);
}

double clip_factor(double norm, double max_norm) {
  return max_norm > 0 && std::isfinite(norm) && norm > max_norm ? max_norm / (norm + 1e-6) : 1.0;  // torch's guard
}

template <typename T>
double clip_grad_norm(std::span<Parameter<T>* const> params, double max_norm) {
  const double norm = grad_norm(params);
  if (clip_factor(norm, max_norm) < 1.0) {
    const T factor = static_cast<T>(clip_factor(norm, max_norm));
    for (Parameter<T>* p : params) {
      T* g = p->grad.data();
      for (int64_t i = 0; i < p->numel(); ++i) g[i] *= factor;
    }
  }
  return norm;
}

template double grad_norm<float>(std::span<Parameter<float>* const>);
template double grad_norm<double>(std::span<Parameter<double>* const>);
template double clip_grad_norm<float>(std::span<Parameter<float>* const>, double);
template double clip_grad_norm<double>(std::span<Parameter<double>* const>, double);

}  // namespace tapegrad
