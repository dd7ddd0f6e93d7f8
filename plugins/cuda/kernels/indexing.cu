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
#include "kernels/elementwise.cuh"
#include "kernels/registry.h"
#include "kiln/sdk/indexing.h"

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
void gather_loop(const Launch& launch, const TensorView& y, const TensorView& index_view,
                 const TensorView& x_view, int64_t dim_stride, int64_t bound, int64_t dim) {
  const TensorView* ops[3] = {&y, &index_view, &x_view};
  const ElementwisePlan<3> plan = make_plan(ops);
  if (plan.numel == 0) return;
  const IndexCheck check{dim_stride, bound, dim, launch.error_flag(), launch.error_detail()};
  visit_by_size(y.itemsize, [&](auto tag) {
    gather_kernel<typename decltype(tag)::type>
        <<<grid_for(plan.numel, launch), kThreads, 0, launch.stream()>>>(plan, check);
  });
}

void run_gather(const sdk::GatherPlan& p, const Launch& launch) {
  if (p.y.numel() == 0) return;
  gather_loop(launch, p.y, p.index_view, p.x_view, p.dim_stride, p.bound, p.dim);
}

void index_select_impl(const OpArgs& args, const Launch& launch) {
  run_gather(sdk::plan_index_select(args), launch);
}

void gather_impl(const OpArgs& args, const Launch& launch) {
  run_gather(sdk::plan_gather(args), launch);
}

}  // namespace

void add_indexing_kernels(KernelList& list) {
  list.push_back(
      catalogue_entry<op::index_select>(&index_select_impl, nullptr, KILN_KERNEL_STRIDED_INPUTS));
  list.push_back(catalogue_entry<op::gather>(&gather_impl, nullptr, KILN_KERNEL_STRIDED_INPUTS));
}

}  // namespace kiln::cuda
