// kiln/sdk/matmul.h — kiln.matmul's operands, checked once for every plugin: a
// [..., m, k] times b [..., k, n] into a contiguous y [..., m, n], one dtype, the same
// batch dims (the frontend has broadcast them). The plugins keep their own GEMMs
// and their libraries' size limits.
#ifndef KILN_SDK_MATMUL_H
#define KILN_SDK_MATMUL_H

#include <cstdint>

#include "kiln/sdk/catalogue.h"
#include "kiln/sdk/op_args.h"

namespace kiln::sdk {

struct MatmulShape {
  int64_t m, n, k;
  int64_t batch;   // product of the batch dims (1 for plain matrices)
  int batch_ndim;  // rank - 2
};

struct Matmul {
  TensorView a, b, y;
  MatmulShape shape;
};

inline Matmul matmul_operands(const OpArgs& args) {
  args.expect_counts(2, 1);
  Matmul o{args.input(0), args.input(1), args.output(0), {}};
  const TensorView &a = o.a, &b = o.b, &y = o.y;
  const int nd = a.ndim;
  KILN_SDK_CHECK_ARG(nd >= 2 && b.ndim == nd && y.ndim == nd,
                     "a, b and y must have one rank >= 2, got ", a.ndim, ", ", b.ndim, ", ",
                     y.ndim);
  expect_dtype(b, a.dtype, "b");
  expect_dtype(y, a.dtype, "y");
  KILN_SDK_CHECK_ARG(y.is_contiguous(), "y must be contiguous");
  MatmulShape& s = o.shape;
  s = {a.shape[nd - 2], b.shape[nd - 1], a.shape[nd - 1], 1, nd - 2};
  KILN_SDK_CHECK_ARG(b.shape[nd - 2] == s.k, "inner dims differ: a has ", s.k, " columns, b has ",
                     b.shape[nd - 2], " rows");
  KILN_SDK_CHECK_ARG(y.shape[nd - 2] == s.m && y.shape[nd - 1] == s.n, "y must be [..., ", s.m,
                     ", ", s.n, "], got ", shape_string(y));
  for (int d = 0; d < s.batch_ndim; ++d) {
    KILN_SDK_CHECK_ARG(a.shape[d] == y.shape[d] && b.shape[d] == y.shape[d], "batch dim ", d,
                       " differs: a ", a.shape[d], ", b ", b.shape[d], ", y ", y.shape[d]);
    s.batch *= y.shape[d];
  }
  return o;
}

/// `supports` of both in-tree kernels: every float dtype (the catalogue requires
/// float32 and float64; the half types are optional and computed in float32), one dtype.
inline int32_t supports_matmul(void*, const kiln_op_args* args) {
  const kiln_dtype d = input_dtype(args, 0);
  return is_float_dtype(d) && input_dtype(args, 1) == d && output_dtype(args, 0) == d;
}

}  // namespace kiln::sdk

#endif  // KILN_SDK_MATMUL_H
