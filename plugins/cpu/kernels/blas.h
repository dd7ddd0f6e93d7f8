// kernels/blas.h — typed row-major GEMM on OpenBLAS for the kernels that need one.
//
// Callers must be on the op's calling thread, never inside a pool task (see
// thread_pool.h): OpenBLAS brings its own threads.
#ifndef KILN_CPU_KERNELS_BLAS_H
#define KILN_CPU_KERNELS_BLAS_H

#include <cblas.h>

#include <climits>
#include <cstdint>

#include "kiln/sdk/status.h"

namespace kiln::cpu {

/// c = alpha * op(a) @ op(b) + beta * c, row-major, m x n result, inner size k.
inline void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
}

inline void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                 const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
                 int64_t ldc) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
}

/// Throws UNSUPPORTED when a GEMM dimension does not fit BLAS's 32-bit int.
inline void check_blas_dims(std::initializer_list<int64_t> dims) {
  for (int64_t d : dims) {
    KILN_SDK_CHECK(d <= INT_MAX, KILN_STATUS_UNSUPPORTED, "a GEMM dimension of ", d,
                   " exceeds the 32-bit BLAS interface");
  }
}

}  // namespace kiln::cpu

#endif  // KILN_CPU_KERNELS_BLAS_H
