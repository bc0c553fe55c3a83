#include "tapegrad/lanczos.h"

#include <Eigen/Dense>
#include <cmath>

#include "tapegrad/error.h"
#include "tapegrad/random.h"

namespace tapegrad {

namespace {
double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}
}  // namespace

EigenEstimate top_eigenvalue(int64_t n, const LinearOperator& apply, const LanczosOptions& o) {
  check(n > 0, "top_eigenvalue: empty operator");
  check(o.max_iters >= 1, "top_eigenvalue: max_iters must be >= 1, got ", o.max_iters);
  const size_t N = static_cast<size_t>(n);
  std::vector<std::vector<double>> q;  // the orthonormal basis q_1..q_k
  std::vector<double> alpha, beta;     // T_k's diagonal and off-diagonal
  Rng rng(o.seed);
  std::vector<double> start(N);
  for (double& x : start) x = rng.normal();
  const double norm0 = std::sqrt(dot(start, start));
  for (double& x : start) x /= norm0;
  q.push_back(std::move(start));

  EigenEstimate e;
  Eigen::VectorXd ritz;  // T_k's top eigenvector, in the basis q
  std::vector<double> w(N);
  for (int k = 0; k < o.max_iters && k < n; ++k) {
    apply(q[static_cast<size_t>(k)], w);
    ++e.iterations;
    alpha.push_back(dot(w, q[static_cast<size_t>(k)]));
    for (int pass = 0; pass < 2; ++pass)  // full re-orthogonalisation, twice
      for (const auto& qi : q) {
        const double c = dot(w, qi);
        for (size_t i = 0; i < N; ++i) w[i] -= c * qi[i];
      }
    const int m = k + 1;
    Eigen::MatrixXd t = Eigen::MatrixXd::Zero(m, m);
    for (int i = 0; i < m; ++i) {
      t(i, i) = alpha[static_cast<size_t>(i)];
      if (i + 1 < m) t(i, i + 1) = t(i + 1, i) = beta[static_cast<size_t>(i)];
    }
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(t);
    e.value = solver.eigenvalues()(m - 1);  // ascending order
    ritz = solver.eigenvectors().col(m - 1);
    const double b = std::sqrt(dot(w, w));
    const bool converged = b * std::abs(ritz(m - 1)) <= o.tol * std::abs(e.value);
    const bool exhausted = b <= 1e-12 * std::max(1.0, std::abs(e.value));
    if (converged || exhausted || k + 1 == o.max_iters || k + 1 == n) break;
    beta.push_back(b);
    for (double& x : w) x /= b;
    q.push_back(w);
  }
  // The Ritz vector y = Q ritz, and its residual ‖A y − λ y‖.
  e.vector.assign(N, 0.0);
  for (Eigen::Index j = 0; j < ritz.size(); ++j)
    for (size_t i = 0; i < N; ++i) e.vector[i] += ritz(j) * q[static_cast<size_t>(j)][i];
  const double norm = std::sqrt(dot(e.vector, e.vector));
  for (double& x : e.vector) x /= norm;
  apply(e.vector, w);
  double r2 = 0;
  for (size_t i = 0; i < N; ++i) r2 += (w[i] - e.value * e.vector[i]) * (w[i] - e.value * e.vector[i]);
  e.residual = std::sqrt(r2);
  return e;
}

}  // namespace tapegrad
