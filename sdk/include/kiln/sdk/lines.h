// kiln/sdk/lines.h — the lines along one dim of a contiguous tensor, for the ops that
// work line by line (softmax, cumsum, cumprod, sort) on every plugin, host and device.
//
// [outer, D, inner] is outer·inner lines of D elements at stride `inner`. Line l starts
// at base(l); item k, position k % D of line k / D, is at offset(k).
#ifndef KILN_SDK_LINES_H
#define KILN_SDK_LINES_H

#include <cstdint>

#include "kiln/sdk/host_device.h"
#include "kiln/sdk/op_args.h"

namespace kiln::sdk {

struct Lines {
  int64_t outer, d, inner;
  KILN_HOST_DEVICE int64_t count() const { return outer * inner; }
  KILN_HOST_DEVICE int64_t items() const { return outer * d * inner; }
  KILN_HOST_DEVICE int64_t base(int64_t line) const {
    return line / inner * d * inner + line % inner;
  }
  KILN_HOST_DEVICE int64_t offset(int64_t k) const {
    if (inner == 1) return k;
    const int64_t line = k / d;
    return base(line) + (k - line * d) * inner;
  }
};

/// The lines of contiguous `x` along `dim`; throws for a bad dim or a strided x.
inline Lines lines_of(const TensorView& x, int64_t dim) {
  KILN_SDK_CHECK_ARG(dim >= 0 && dim < x.ndim, "dim ", dim, " is out of range for ",
                     shape_string(x));
  expect_contiguous(x, "x");
  Lines l{1, x.shape[dim], 1};
  for (int64_t k = 0; k < dim; ++k) l.outer *= x.shape[k];
  for (int64_t k = dim + 1; k < x.ndim; ++k) l.inner *= x.shape[k];
  return l;
}

}  // namespace kiln::sdk

#endif  // KILN_SDK_LINES_H
