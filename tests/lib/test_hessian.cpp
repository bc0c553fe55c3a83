// Hessian-vector products and Lanczos, against matrices whose spectrum is known.
#include <Eigen/Dense>
#include <cmath>

#include "support.h"
#include "tapegrad/hessian.h"
#include "tapegrad/lanczos.h"

using namespace tapegrad;

namespace {
// A = Q diag(lambda) Qᵀ with a seeded random orthogonal Q.
Eigen::MatrixXd with_spectrum(const std::vector<double>& lambda, uint64_t seed) {
  const int n = static_cast<int>(lambda.size());
  Rng rng(seed);
  Eigen::MatrixXd g(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) g(i, j) = rng.normal();
  const Eigen::MatrixXd q = Eigen::HouseholderQR<Eigen::MatrixXd>(g).householderQ();
  return q * Eigen::VectorXd::Map(lambda.data(), n).asDiagonal() * q.transpose();
}
}  // namespace

TEST_CASE("hessian: on a quadratic the product and the top eigenvalue are exact", "[hessian]") {
  // L(w) = ½ wᵀ A w + bᵀ w: gradient A w + b, Hessian A, spectrum {-3, 0.5, 1, 2, 7.25} + small ones.
  std::vector<double> lambda{-3, 0.5, 1, 2, 7.25};
  for (int i = 0; i < 25; ++i) lambda.push_back(0.01 * i);
  const Eigen::MatrixXd a = with_spectrum(lambda, 1);
  const int n = static_cast<int>(lambda.size());
  Rng rng(2);
  Parameter<double> w1("w1", Tensor<double>::randn({10}, rng)), w2("w2", Tensor<double>::randn({4, 5}, rng));
  std::vector<Parameter<double>*> params{&w1, &w2};
  const Eigen::VectorXd b = Eigen::VectorXd::Random(n);
  const auto flat_w = [&] {
    Eigen::VectorXd w(n);
    for (int i = 0; i < 10; ++i) w(i) = w1.value()[i];
    for (int i = 0; i < 20; ++i) w(10 + i) = w2.value()[i];
    return w;
  };
  const GradientFn gradient = [&](std::span<double> g) { Eigen::VectorXd::Map(g.data(), n) = a * flat_w() + b; };

  const Eigen::VectorXd w_before = flat_w();
  Eigen::VectorXd v = Eigen::VectorXd::Random(n) * 1e3, hv(n);  // v's scale does not matter
  hessian_vector_product(params, gradient, {v.data(), static_cast<size_t>(v.size())}, {hv.data(), static_cast<size_t>(hv.size())});
  CHECK((hv - a * v).norm() <= 1e-8 * (a * v).norm());
  CHECK(flat_w() == w_before);  // the parameters are restored bitwise

  const EigenEstimate e = top_eigenvalue(
      n, [&](std::span<const double> x, std::span<double> y) {
        hessian_vector_product(params, gradient, x, y);
      },
      {.max_iters = 30, .tol = 1e-12});
  INFO("iterations " << e.iterations << ", residual " << e.residual);
  CHECK(std::abs(e.value - 7.25) <= 1e-8 * 7.25);
  CHECK(e.residual <= 1e-6);
}

TEST_CASE("lanczos: the top eigenvalue of random symmetric matrices, against Eigen's dense solver", "[hessian]") {
  const int n = GENERATE(8, 60, 200);
  Rng rng(static_cast<uint64_t>(n));
  Eigen::MatrixXd g(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) g(i, j) = rng.normal();
  const Eigen::MatrixXd a = (g + g.transpose()) / 2;
  const double exact = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(a).eigenvalues()(n - 1);
  const EigenEstimate e = top_eigenvalue(
      n, [&](std::span<const double> x, std::span<double> y) {
        Eigen::VectorXd::Map(y.data(), n) = a * Eigen::VectorXd::Map(x.data(), n);
      },
      {.max_iters = 80, .tol = 1e-10});
  INFO("n " << n << ": Lanczos " << e.value << " after " << e.iterations << " steps, exact " << exact << ", residual "
            << e.residual);
  CHECK(std::abs(e.value - exact) <= 1e-6 * std::abs(exact));
  CHECK(e.iterations <= 80);
  // A step budget below convergence still reports an honest residual.
  const EigenEstimate rough = top_eigenvalue(
      n, [&](std::span<const double> x, std::span<double> y) {
        Eigen::VectorXd::Map(y.data(), n) = a * Eigen::VectorXd::Map(x.data(), n);
      },
      {.max_iters = 3});
  CHECK(rough.value <= exact + 1e-9);  // Ritz values approach from below
  CHECK(rough.residual > 0);
}
