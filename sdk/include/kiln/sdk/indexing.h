// kiln/sdk/indexing.h — kiln.index_select and kiln.gather as one gather, checked and
// planned once for every plugin: y[i] = x[x_view offset of i + index_view[i] * dim_stride],
// where index_view and x_view are the index and x seen with y's shape (x with stride 0
// along `dim`, and for index_select the 1-D index with stride 0 along every other
// dim). The kernels keep their own loops and their own check of the index values.
#ifndef KILN_SDK_INDEXING_H
#define KILN_SDK_INDEXING_H

#include <cstdint>
#include <vector>

#include "kiln/sdk/op_args.h"
#include "kiln/sdk/op_attrs.h"

namespace kiln::sdk {

/// The "dim" attribute of kiln.index_select, gather, index_add or scatter_add (one
/// attribute list), checked against x's rank.
inline int64_t checked_dim(const OpArgs& args, int32_t ndim) {
  const int64_t dim = attrs::index_select::read(args).dim;
  KILN_SDK_CHECK_ARG(dim >= 0 && dim < ndim, "dim ", dim, " is out of range for a ", ndim, "-D x");
  return dim;
}

/// A checked gather. The views point into the plan's own stride vectors: move it, never
/// copy it.
struct GatherPlan {
  TensorView y, index_view, x_view;
  int64_t dim = 0;
  int64_t dim_stride = 0;  // x's stride along dim, elements
  int64_t bound = 0;       // x's size along dim: every index must be in [0, bound)
  TensorView index;        // the index as given (its values are what a kernel checks)
  std::vector<int64_t> index_strides, x_strides;

  GatherPlan() = default;
  GatherPlan(GatherPlan&&) = default;
  GatherPlan(const GatherPlan&) = delete;
  GatherPlan& operator=(const GatherPlan&) = delete;
};

namespace detail {

// The checks both ops share, and x viewed with y's shape.
inline GatherPlan gather_common(const OpArgs& args) {
  args.expect_counts(2, 1);
  GatherPlan p;
  const TensorView x = args.input(0);
  p.index = args.input(1);
  p.y = args.output(0);
  p.dim = checked_dim(args, x.ndim);
  expect_dtype(p.index, KILN_DTYPE_INT64, "index");
  expect_dtype(p.y, x.dtype, "y");
  p.dim_stride = x.strides[p.dim];
  p.bound = x.shape[p.dim];
  p.x_strides.assign(x.strides, x.strides + x.ndim);
  p.x_strides[static_cast<size_t>(p.dim)] = 0;
  return p;
}

inline void finish_views(GatherPlan& p, const TensorView& x) {
  expect_contiguous(p.y, "y");  // neither op's kernels take strided outputs
  p.x_view = p.y;
  p.x_view.data = x.data;
  p.x_view.strides = p.x_strides.data();
}

}  // namespace detail

/// kiln.index_select: x, a 1-D int64 index, y with x's shape but index's length
/// along dim.
inline GatherPlan plan_index_select(const OpArgs& args) {
  GatherPlan p = detail::gather_common(args);
  const TensorView x = args.input(0);
  KILN_SDK_CHECK_ARG(p.index.ndim == 1, "index must be 1-D, got ", p.index.ndim, "-D");
  KILN_SDK_CHECK_ARG(p.y.ndim == x.ndim, "y must have x's rank ", x.ndim, ", got ", p.y.ndim);
  for (int32_t d = 0; d < x.ndim; ++d) {
    const int64_t want = d == p.dim ? p.index.shape[0] : x.shape[d];
    KILN_SDK_CHECK_ARG(p.y.shape[d] == want, "y.shape[", d, "] = ", p.y.shape[d], ", expected ",
                       want);
  }
  detail::finish_views(p, x);
  p.index_strides.assign(static_cast<size_t>(p.y.ndim), 0);
  p.index_strides[static_cast<size_t>(p.dim)] = p.index.strides[0];
  p.index_view = p.y;
  p.index_view.data = p.index.data;
  p.index_view.strides = p.index_strides.data();
  p.index_view.itemsize = sizeof(int64_t);
  p.index_view.dtype = KILN_DTYPE_INT64;
  return p;
}

/// kiln.gather: x, an int64 index of x's rank (no larger than x but along dim), y with
/// index's shape.
inline GatherPlan plan_gather(const OpArgs& args) {
  GatherPlan p = detail::gather_common(args);
  const TensorView x = args.input(0);
  KILN_SDK_CHECK_ARG(p.index.ndim == x.ndim, "index must have x's rank ", x.ndim, ", got ",
                     p.index.ndim);
  expect_same_shape(p.y, p.index, "y");
  for (int32_t d = 0; d < x.ndim; ++d) {
    KILN_SDK_CHECK_ARG(d == p.dim || p.index.shape[d] <= x.shape[d], "index.shape[", d,
                       "] = ", p.index.shape[d], " exceeds x.shape[", d, "] = ", x.shape[d]);
  }
  detail::finish_views(p, x);
  p.index_view = p.index;
  return p;
}

}  // namespace kiln::sdk

#endif  // KILN_SDK_INDEXING_H
