// The largest eigenvalue of a symmetric linear operator known only through products A x — a
// Hessian through hessian_vector_product, say — by the Lanczos iteration (Golub & Van Loan §10.1).
//
// From a seeded random unit start q1, k steps build an orthonormal basis Q_k of the Krylov space
// span{q1, A q1, ..., A^{k-1} q1} and the tridiagonal T_k = Q_kᵀ A Q_k; the largest eigenvalue of
// T_k (the Ritz value) converges to λ_max(A) from below, fastest when it is well separated. Each
// new basis vector is re-orthogonalised against all earlier ones (twice is enough, "Kahan's
// rule"): without it, rounding brings copies of converged eigenvalues back ("ghosts").
// Stopping rule: the Ritz value changed by at most tol · |value| since the previous step, or
// max_iters steps, or the Krylov space is exhausted (an invariant subspace: exact). The reported
// residual is ‖A y − λ y‖ for the Ritz vector y, from one more product (not the cheaper bound).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace tapegrad {

using LinearOperator = std::function<void(std::span<const double> x, std::span<double> y)>;  // y = A x

struct LanczosOptions {
  int max_iters = 20;
  double tol = 1e-6;
  uint64_t seed = 1;
};

struct EigenEstimate {
  double value = 0;          // the top Ritz value: an estimate of λ_max from below
  int iterations = 0;        // Lanczos steps (products with A), not counting the residual's
  double residual = 0;       // ‖A y − λ y‖ for the unit Ritz vector y
  std::vector<double> vector;  // y
};

EigenEstimate top_eigenvalue(int64_t n, const LinearOperator& apply, const LanczosOptions& options = {});

}  // namespace tapegrad
