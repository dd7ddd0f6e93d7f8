// kiln.matmul: batched GEMM through OpenBLAS.
//
// Each operand matrix is handed to cblas_?gemm on its own memory whenever its last
// two dims are row-major (NoTrans) or column-major (Trans) with a valid leading
// dimension, so transposed views cost nothing. Anything else (broadcast or
// arbitrary strides inside a matrix) is packed into a contiguous temporary. Half
// types are widened to float32, multiplied with sgemm and rounded once.
//
// OpenBLAS runs in serial mode and the plugin's pool supplies the threads (blas.h):
// a batch of at least as many matrices as threads gives each thread whole GEMMs,
// otherwise each GEMM is split into row or column blocks.
#include <cblas.h>

#include <climits>
#include <cstring>
#include <vector>

#include "blas.h"
#include "elementwise.h"
#include "kiln/sdk/matmul.h"
#include "reduce_engine.h"
#include "registry.h"

namespace kiln::cpu {

namespace {

struct MatrixLayout {
  bool direct;  // false: pack first
  CBLAS_TRANSPOSE trans;
  int64_t ld;
};

// How BLAS can read a rows x cols matrix with the given element strides.
MatrixLayout layout_of(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  if ((cols == 1 || col_stride == 1) && (rows == 1 || row_stride >= std::max<int64_t>(1, cols))) {
    return {true, CblasNoTrans, rows == 1 ? std::max<int64_t>(1, cols) : row_stride};
  }
  if ((rows == 1 || row_stride == 1) && (cols == 1 || col_stride >= std::max<int64_t>(1, rows))) {
    return {true, CblasTrans, cols == 1 ? std::max<int64_t>(1, rows) : col_stride};
  }
  return {false, CblasNoTrans, std::max<int64_t>(1, cols)};
}

// Copies a strided rows x cols matrix into a contiguous row-major buffer.
template <class Dst, class Src>
void pack(const Src* src, int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride,
          Dst* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    const Src* row = src + r * row_stride;
    Dst* out = dst + r * cols;
    for (int64_t c = 0; c < cols; ++c) out[c] = convert<Dst>(row[c * col_stride]);
  }
}

using sdk::MatmulShape;

// One operand matrix as BLAS will see it, packing into `scratch` when necessary.
template <class Compute, class T>
const Compute* blas_operand(const T* data, int64_t rows, int64_t cols, int64_t row_stride,
                            int64_t col_stride, std::vector<Compute>& scratch,
                            MatrixLayout& layout) {
  layout = layout_of(rows, cols, row_stride, col_stride);
  if constexpr (std::is_same_v<Compute, T>) {
    if (layout.direct) return data;
  }
  scratch.resize(static_cast<size_t>(rows * cols));
  pack(data, rows, cols, row_stride, col_stride, scratch.data());
  layout = {true, CblasNoTrans, std::max<int64_t>(1, cols)};
  return scratch.data();
}

template <class T>
void matmul_typed(const TensorView& a, const TensorView& b, const TensorView& y,
                  const MatmulShape& s) {
  // float64 multiplies in float64; everything else in float32.
  using Compute = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int nd = a.ndim;
  const int64_t a_rs = a.strides[nd - 2], a_cs = a.strides[nd - 1];
  const int64_t b_rs = b.strides[nd - 2], b_cs = b.strides[nd - 1];
  SerialBlasScope serial;
  if constexpr (std::is_same_v<Compute, T>) {
    // Enough matrices for every thread, each readable by BLAS in place: one serial
    // GEMM per matrix, whole matrices per thread.
    const MatrixLayout la = layout_of(s.m, s.k, a_rs, a_cs);
    const MatrixLayout lb = layout_of(s.k, s.n, b_rs, b_cs);
    if (s.batch >= pool().size() && pool().size() > 1 && la.direct && lb.direct &&
        la.ld <= INT_MAX && lb.ld <= INT_MAX && s.batch * s.m * s.n * s.k >= kParallelGemmWork) {
      pool().parallel_for(0, s.batch, 1, [&](int64_t begin, int64_t end) {
        for (int64_t batch = begin; batch < end; ++batch) {
          gemm(la.trans == CblasTrans, lb.trans == CblasTrans, s.m, s.n, s.k, T(1),
               a.ptr<const T>() + offset_of(batch, s.batch_ndim, a.shape, a.strides), la.ld,
               b.ptr<const T>() + offset_of(batch, s.batch_ndim, b.shape, b.strides), lb.ld, T(0),
               y.ptr<T>() + batch * s.m * s.n, std::max<int64_t>(1, s.n));
        }
      });
      return;
    }
  }
  std::vector<Compute> a_scratch, b_scratch, y_scratch;
  for (int64_t batch = 0; batch < s.batch; ++batch) {
    const T* a_ptr = a.ptr<const T>() + offset_of(batch, s.batch_ndim, a.shape, a.strides);
    const T* b_ptr = b.ptr<const T>() + offset_of(batch, s.batch_ndim, b.shape, b.strides);
    T* y_ptr = y.ptr<T>() + batch * s.m * s.n;
    MatrixLayout la, lb;
    const Compute* a_blas = blas_operand<Compute>(a_ptr, s.m, s.k, a_rs, a_cs, a_scratch, la);
    const Compute* b_blas = blas_operand<Compute>(b_ptr, s.k, s.n, b_rs, b_cs, b_scratch, lb);
    KILN_SDK_CHECK(la.ld <= INT_MAX && lb.ld <= INT_MAX, KILN_STATUS_UNSUPPORTED,
                   "leading dimension above INT_MAX (", la.ld, ", ", lb.ld, ")");
    Compute* c = nullptr;
    if constexpr (std::is_same_v<Compute, T>) {
      c = y_ptr;
    } else {
      y_scratch.resize(static_cast<size_t>(s.m * s.n));
      c = y_scratch.data();
    }
    parallel_gemm(la.trans == CblasTrans, lb.trans == CblasTrans, s.m, s.n, s.k, Compute(1), a_blas,
                  la.ld, b_blas, lb.ld, Compute(0), c, std::max<int64_t>(1, s.n));
    if constexpr (!std::is_same_v<Compute, T>) {
      for (int64_t i = 0; i < s.m * s.n; ++i) y_ptr[i] = convert<T>(c[i]);
    }
  }
}

void matmul_impl(const OpArgs& args) {
  const sdk::Matmul o = sdk::matmul_operands(args);
  const TensorView &a = o.a, &b = o.b, &y = o.y;
  const MatmulShape& s = o.shape;
  KILN_SDK_CHECK(s.m <= INT_MAX && s.n <= INT_MAX && s.k <= INT_MAX, KILN_STATUS_UNSUPPORTED,
                 "matrix dims above INT_MAX (", s.m, ", ", s.n, ", ", s.k, ")");
  if (s.batch == 0 || s.m == 0 || s.n == 0) return;
  if (s.k == 0) {  // an empty sum: zeros, without asking BLAS about a degenerate call
    std::memset(y.data, 0, static_cast<size_t>(s.batch * s.m * s.n) * y.itemsize);
    return;
  }
  if (!visit_dtype<FloatTypes>(
          a.dtype, [&](auto tag) { matmul_typed<typename decltype(tag)::type>(a, b, y, s); })) {
    unsupported_dtype(a.dtype);
  }
}

}  // namespace

void add_matmul_kernels(KernelList& list) {
  list.push_back(catalogue_entry<op::matmul>(&run_kernel<matmul_impl>, &sdk::supports_matmul,
                                             KILN_KERNEL_STRIDED_INPUTS));
}

}  // namespace kiln::cpu
