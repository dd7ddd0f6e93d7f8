#pragma once
// Kernels that work along one dim of a contiguous tensor (softmax, cumsum, sort):
// [outer, D, inner] is outer·inner lines of D elements at stride `inner`, each line
// done by one thread.
#include <algorithm>

#include "elementwise.h"

namespace kiln::cpu {

struct Lines {
  int64_t outer, d, inner;
  int64_t count() const { return outer * inner; }
  int64_t base(int64_t line) const { return line / inner * d * inner + line % inner; }
};

/// The lines of contiguous `x` along `dim`; throws for a bad dim or a strided x.
inline Lines lines_of(const Tensor& x, int64_t dim) {
  KILN_SDK_CHECK_ARG(dim >= 0 && dim < x.ndim, "dim ", dim, " is out of range for ",
                     shape_string(x));
  expect_contiguous(x, "x");
  Lines l{1, x.shape[dim], 1};
  for (int64_t k = 0; k < dim; ++k) l.outer *= x.shape[k];
  for (int64_t k = dim + 1; k < x.ndim; ++k) l.inner *= x.shape[k];
  return l;
}

/// Calls fn(first element of the line, stride) for every line, in parallel.
template <class Fn>
void for_each_line(const Lines& l, const Fn& fn) {
  if (l.d == 0 || l.count() == 0) return;
  pool().parallel_for(0, l.count(), std::max<int64_t>(1, kParallelGrain / (4 * l.d)),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t line = begin; line < end; ++line) fn(l.base(line), l.inner);
                      });
}

}  // namespace kiln::cpu
