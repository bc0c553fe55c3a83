#include "tapegrad/ops/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tapegrad {

// Per row, with p = softmax(z):  d/dz_j [logsumexp(z) - z_t] = p_j - [j == t].
// The mean over N rows scales that by 1/N, and the upstream gradient by dloss:
//   dz_ij += (dloss / N) (exp(z_ij - lse_i) - [j == t_i])
// Recomputing p from z and lse in backward costs one exp per logit and saves an (N, V) buffer.
// z-loss: d/dz_j [c lse^2] = 2 c lse p_j, so the softmax term is scaled per row by (1 + 2 c lse_i):
//   dz_ij += (dloss / N) ((1 + 2 c lse_i) exp(z_ij - lse_i) - [j == t_i])
// — inside the same pass, at no extra exp.

TAPEGRAD_ISA_DISPATCH(CrossEntropyKernels, cross_entropy_kernels)

// The row kernels (logsumexp, the gradient) are cross_entropy_kernels.cpp's, one copy per ISA.
template <typename T>
CrossEntropyTerms cross_entropy_forward(T* lse, const T* logits, const int32_t* targets, int64_t N, int64_t V,
                                        double z_loss) {
  cross_entropy_kernels().get<T>().logsumexp_rows(lse, logits, N, V);
  double ce = 0, sq = 0, sum = 0, mn = std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < N; ++i) {
    const double l = lse[i];
    ce += l - logits[i * V + targets[i]];
    sq += l * l, sum += l;
    if (!(l >= mn)) mn = l;  // NaN propagates
  }
  const double n = static_cast<double>(N);
  return {.cross_entropy = ce / n, .z_loss = z_loss > 0 ? z_loss * sq / n : 0.0, .log_z_mean = sum / n, .log_z_min = mn};
}

template <typename T>
void cross_entropy_backward(T* dlogits, const T* logits, const T* lse, const int32_t* targets, int64_t N,
                            int64_t V, T scale, T z_loss) {
  cross_entropy_kernels().get<T>().backward(dlogits, logits, lse, targets, N, V, scale, z_loss);
}

template <typename T>
Var<T> cross_entropy(Var<T> logits, std::span<const int32_t> targets, double z_loss, CrossEntropyTerms* terms) {
  check_finite(z_loss, Bound::kNonNegative, "cross_entropy: z_loss");
  const Shape s = logits.shape();
  check(s.rank() >= 1 && s.last() > 0, "cross_entropy: logits need a non-empty last dim, got ", s);
  const int64_t V = s.last(), N = s.rows();
  check(N > 0, "cross_entropy: no rows in logits ", s);
  check(static_cast<int64_t>(targets.size()) == N, "cross_entropy: logits ", s, " have ", N,
        " rows but ", targets.size(), " targets were given");
  for (int64_t i = 0; i < N; ++i)
    check(targets[i] >= 0 && targets[i] < V, "cross_entropy: target ", targets[i], " at row ", i,
          " is out of range [0, ", V, ")");

  Tape<T>& tape = logits.tape();
  Var<T> loss = tape.make_output("cross_entropy", Shape{}, {logits});
  T* lse = tape.template scratch<T>(N);
  const CrossEntropyTerms parts = cross_entropy_forward(lse, logits.data(), targets.data(), N, V, z_loss);
  loss.data()[0] = static_cast<T>(parts.objective());
  if (terms) *terms = parts;
  tape.record("cross_entropy", {logits}, loss,
              [z = logits.data(), lse, t = targets.data(), N, V, c = static_cast<T>(z_loss)](const T* dloss, T* const* dz) {
                cross_entropy_backward(dz[0], z, lse, t, N, V, dloss[0] / static_cast<T>(N), c);
              });
  return loss;
}

template CrossEntropyTerms cross_entropy_forward<float>(float*, const float*, const int32_t*, int64_t, int64_t, double);
template CrossEntropyTerms cross_entropy_forward<double>(double*, const double*, const int32_t*, int64_t, int64_t,
                                                         double);
template void cross_entropy_backward<float>(float*, const float*, const float*, const int32_t*, int64_t,
                                            int64_t, float, float);
template void cross_entropy_backward<double>(double*, const double*, const double*, const int32_t*,
                                             int64_t, int64_t, double, double);
template Var<float> cross_entropy(Var<float>, std::span<const int32_t>, double, CrossEntropyTerms*);
template Var<double> cross_entropy(Var<double>, std::span<const int32_t>, double, CrossEntropyTerms*);

}  // namespace tapegrad
