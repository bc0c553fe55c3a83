// Eigen's matrix product with EIGEN_USE_BLAS: Eigen forwards large products to ?gemm_ (OpenBLAS).
// In its own translation unit so the macro does not change the other benchmarks' Eigen.
#define EIGEN_USE_BLAS
#include <Eigen/Core>

void eigen_blas_product(int M, int N, int K, const float* A, const float* B, float* C) {
  using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const Mat> a(A, M, K), b(B, K, N);
  Eigen::Map<Mat> c(C, M, N);
  c.noalias() = a * b;
}
