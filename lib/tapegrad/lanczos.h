// The largest eigenvalue of a symmetric linear operator known only through products A x — a
// Hessian through hessian_vector_product, say — by the Lanczos iteration (Golub & Van Loan §10.1).
//
// From a seeded random unit start q1, k steps build an orthonormal basis Q_k of the Krylov space
// span{q1, A q1, ..., A^{k-1} q1} and the tridiagonal T_k = Q_kᵀ A Q_k; the largest eigenvalue of
// T_k (the Ritz value) converges to λ_max(A) from below, fastest when it is well separated. Each
// new basis vector is re-orthogonalised against all earlier ones (twice is enough, "Kahan's
// rule"): without it, rounding brings copies of converged eigenvalues back ("ghosts").
// Stopping rule: the Ritz pair's residual ‖A y − θ y‖ = β_{k+1} |s_k| (s_k the last component of
// T_k's top eigenvector: Golub & Van Loan §10.1.4, no extra product) is at most tol · |θ|, so
// an eigenvalue of A lies within tol · |θ| of θ; or max_iters steps; or the Krylov space is
// exhausted (an invariant subspace: exact). A Ritz value that merely stalls is not converged: on
// a preconditioned Hessian it stalled for a few steps 12 % below the top eigenvalue. The reported
// residual is ‖A y − θ y‖ recomputed for the Ritz vector y, from one more product.
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
