// kernels/blas.h — typed row-major GEMM on OpenBLAS for the kernels that need one.
//
// Threading: the plugin runs every GEMM with OpenBLAS in serial mode (one call = one
// thread) and parallelizes over this plugin's own pool instead: split one GEMM into
// row or column blocks (`parallel_gemm`), or give each pool task its own GEMMs
// (convolution: one sample per task). OpenBLAS's pthread server keeps its own
// threads, which spin for a long while after every threaded call; letting them and
// the pool's workers take turns on the same cores made two threads slower than one.
// So every kernel that calls gemm() holds a SerialBlasScope, entered on the op's
// calling thread around its parallel region; after init, only set_blas_threads
// (kiln::set_num_threads) changes OpenBLAS's thread count, under the same lock.
#ifndef KILN_CPU_KERNELS_BLAS_H
#define KILN_CPU_KERNELS_BLAS_H

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "kiln/sdk/status.h"
#include "thread_pool.h"

namespace kiln::cpu {

/// While at least one scope is alive (on any thread), OpenBLAS runs each call on the
/// thread that makes it, so GEMMs can be issued from pool tasks without OpenBLAS's
/// own threads competing for the cores. The thread count the process had is restored
/// when the last scope ends, so code outside Kiln that calls BLAS keeps its setting
/// (a BLAS call elsewhere in the process while a Kiln op runs gets one thread).
class SerialBlasScope {
 public:
  SerialBlasScope();
  ~SerialBlasScope();
  SerialBlasScope(const SerialBlasScope&) = delete;
  SerialBlasScope& operator=(const SerialBlasScope&) = delete;
};

/// Sets OpenBLAS's thread count for BLAS calls made outside Kiln's ops (the
/// "kiln.threads.v1" extension): at once when no SerialBlasScope is alive, else when
/// the last one ends, so a GEMM running serially is never switched to threaded.
void set_blas_threads(int num_threads);

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

/// Multiply-adds below which a GEMM is not worth splitting across threads.
inline constexpr int64_t kParallelGemmWork = int64_t{1} << 19;

/// gemm() split into one block of rows (or, for matrices too short for that, of
/// columns) per pool thread, each a serial OpenBLAS call. Every element of c is
/// computed by exactly one call, over the whole inner dimension. Row blocks of c are
/// contiguous, so each thread clears and updates one region of its own; that beat
/// column blocks (which pack less, all of op(a) per block instead of all of op(b))
/// on the training steps' GEMMs (MLP at batch 256: 1.34 vs 1.42-1.48 ms per step on
/// 2 threads). Call it from the op's calling thread, inside a SerialBlasScope.
template <class T>
void parallel_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                   int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  const int threads = pool().size();
  if (threads == 1 || m * n * k < kParallelGemmWork) {
    gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  // Blocks of at least 16 rows or columns (a whole 64-byte line of float32 columns),
  // so neighbouring blocks rarely share a cache line of c.
  constexpr int64_t kMinBlock = 16;
  const bool split_columns = m < threads * kMinBlock && n > m;
  const int64_t extent = split_columns ? n : m;
  const int64_t blocks = std::min<int64_t>(threads, std::max<int64_t>(1, extent / kMinBlock));
  if (blocks <= 1) {
    gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const int64_t step = (extent / blocks + kMinBlock - 1) / kMinBlock * kMinBlock;
  pool().parallel_for(0, blocks, 1, [&](int64_t first, int64_t last) {
    for (int64_t blk = first; blk < last; ++blk) {
      const int64_t begin = blk * step;
      const int64_t end = blk + 1 == blocks ? extent : std::min(extent, begin + step);
      if (begin >= end) continue;
      if (split_columns) {
        // Columns [begin, end) of op(b): column j of b, or row j of b when transposed.
        const T* b_block = trans_b ? b + begin * ldb : b + begin;
        gemm(trans_a, trans_b, m, end - begin, k, alpha, a, lda, b_block, ldb, beta, c + begin,
             ldc);
      } else {
        const T* a_block = trans_a ? a + begin : a + begin * lda;
        gemm(trans_a, trans_b, end - begin, n, k, alpha, a_block, lda, b, ldb, beta,
             c + begin * ldc, ldc);
      }
    }
  });
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
