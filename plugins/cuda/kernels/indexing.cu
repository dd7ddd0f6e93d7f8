// kiln.index_select and kiln.gather.
//
// Both are one loop over y with three operands: y, the index viewed with y's shape,
// and x viewed with y's shape but stride 0 along `dim`; each element adds
// index * x.strides[dim] to x's offset. For index_select the index view has stride 0
// along every other dim, so an embedding lookup reads each index once per cache line.
//
// An index outside [0, size of dim) is only known once the kernel reads it: the
// element is skipped and the launch's error flag is set (common.cuh), which the
// runtime reports as INVALID_ARGUMENT naming the op, the index and the bound at the
// next synchronization point (at once under KILN_CUDA_SYNC=1).
#include <vector>

#include "kernels/elementwise.cuh"
#include "kernels/registry.h"

namespace kiln::cuda {

namespace {

struct IndexCheck {
  int64_t dim_stride;  // x's stride along dim, elements
  int64_t bound;       // x's size along dim
  int64_t dim;
  int32_t* flag;
  int64_t* detail;
};

template <class Bits>
__global__ void __launch_bounds__(kThreads)
    gather_kernel(const __grid_constant__ ElementwisePlan<3> p, const IndexCheck check) {
  for (int64_t i = global_thread(); i < p.numel; i += grid_threads()) {
    int64_t off[3];
    offsets_of(p, i, off);
    const int64_t index = reinterpret_cast<const int64_t*>(p.base[1])[off[1]];
    // Negative indices become huge unsigned values: one comparison covers both ends.
    if (static_cast<uint64_t>(index) >= static_cast<uint64_t>(check.bound)) {
      report_device_error(check.flag, check.detail, kDeviceErrorIndexOutOfRange, index, check.bound,
                          check.dim);
      continue;
    }
    reinterpret_cast<Bits*>(p.base[0])[off[0]] =
        reinterpret_cast<const Bits*>(p.base[2])[off[2] + index * check.dim_stride];
  }
}

// Runs the gather for y with index/x views already shaped like y.
void gather_loop(const Launch& launch, const Tensor& y, const Tensor& index_view,
                 const Tensor& x_view, int64_t dim_stride, int64_t bound, int64_t dim) {
  const Tensor* ops[3] = {&y, &index_view, &x_view};
  const ElementwisePlan<3> plan = make_plan(ops);
  if (plan.numel == 0) return;
  const IndexCheck check{dim_stride, bound, dim, launch.error_flag(), launch.error_detail()};
  dispatch_by_size(y.itemsize, [&](auto tag) {
    gather_kernel<typename decltype(tag)::type>
        <<<grid_for(plan.numel, launch), kThreads, 0, launch.stream()>>>(plan, check);
  });
}

int64_t checked_dim(const OpArgs& args, int32_t ndim) {
  const int64_t dim = args.attr_int("dim");
  KILN_SDK_CHECK_ARG(dim >= 0 && dim < ndim, "dim ", dim, " is out of range for a ", ndim, "-D x");
  return dim;
}

void index_select_impl(const OpArgs& args, const Launch& launch) {
  args.expect_counts(2, 1);
  const Tensor x = args.input(0);
  const Tensor index = args.input(1);
  const Tensor y = args.output(0);
  const int64_t dim = checked_dim(args, x.ndim);
  expect_dtype(index, KILN_DTYPE_INT64, "index");
  expect_dtype(y, x.dtype, "y");
  KILN_SDK_CHECK_ARG(index.ndim == 1, "index must be 1-D, got ", index.ndim, "-D");
  KILN_SDK_CHECK_ARG(y.ndim == x.ndim, "y must have x's rank ", x.ndim, ", got ", y.ndim);
  for (int32_t d = 0; d < x.ndim; ++d) {
    const int64_t want = d == dim ? index.shape[0] : x.shape[d];
    KILN_SDK_CHECK_ARG(y.shape[d] == want, "y.shape[", d, "] = ", y.shape[d], ", expected ", want);
  }
  expect_contiguous(y, "y");
  if (y.numel() == 0) return;

  std::vector<int64_t> index_strides(static_cast<size_t>(y.ndim), 0);
  index_strides[static_cast<size_t>(dim)] = index.strides[0];
  std::vector<int64_t> x_strides(x.strides, x.strides + x.ndim);
  x_strides[static_cast<size_t>(dim)] = 0;
  Tensor index_view = y;
  index_view.data = index.data;
  index_view.strides = index_strides.data();
  index_view.itemsize = sizeof(int64_t);
  Tensor x_view = y;
  x_view.data = x.data;
  x_view.strides = x_strides.data();
  gather_loop(launch, y, index_view, x_view, x.strides[dim], x.shape[dim], dim);
}

void gather_impl(const OpArgs& args, const Launch& launch) {
  args.expect_counts(2, 1);
  const Tensor x = args.input(0);
  const Tensor index = args.input(1);
  const Tensor y = args.output(0);
  const int64_t dim = checked_dim(args, x.ndim);
  expect_dtype(index, KILN_DTYPE_INT64, "index");
  expect_dtype(y, x.dtype, "y");
  KILN_SDK_CHECK_ARG(index.ndim == x.ndim, "index must have x's rank ", x.ndim, ", got ",
                     index.ndim);
  expect_same_shape(y, index, "y");
  for (int32_t d = 0; d < x.ndim; ++d) {
    KILN_SDK_CHECK_ARG(d == dim || index.shape[d] <= x.shape[d], "index.shape[", d,
                       "] = ", index.shape[d], " exceeds x.shape[", d, "] = ", x.shape[d]);
  }
  expect_contiguous(y, "y");
  if (y.numel() == 0) return;

  std::vector<int64_t> x_strides(x.strides, x.strides + x.ndim);
  x_strides[static_cast<size_t>(dim)] = 0;
  Tensor x_view = y;
  x_view.data = x.data;
  x_view.strides = x_strides.data();
  gather_loop(launch, y, index, x_view, x.strides[dim], x.shape[dim], dim);
}

}  // namespace

void add_indexing_kernels(KernelList& list) {
  list.push_back({"kiln.index_select", &index_select_impl, nullptr, KILN_KERNEL_STRIDED_INPUTS});
  list.push_back({"kiln.gather", &gather_impl, nullptr, KILN_KERNEL_STRIDED_INPUTS});
}

}  // namespace kiln::cuda
