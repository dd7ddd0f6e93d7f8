// kiln.index_select and kiln.gather.
//
// Both become one elementwise loop over y with three operands: y, the index viewed
// with y's shape, and x viewed with y's shape but stride 0 along `dim`; the inner loop
// adds index * x.strides[dim]. For index_select the index is constant along every
// other dim, so rows of x are copied whole (the embedding-lookup case).
// Indices are validated before anything is written.
#include <atomic>
#include <cstring>
#include <vector>

#include "elementwise.h"
#include "index_check.h"
#include "kiln/sdk/indexing.h"
#include "registry.h"

namespace kiln::cpu {

namespace {

template <class Bits>
struct GatherLoop {
  int64_t dim_stride;  // x's stride along dim, elements

  void operator()(char* const* p, const int64_t* s, int64_t n) const {
    Bits* y = reinterpret_cast<Bits*>(p[0]);
    const int64_t* index = reinterpret_cast<const int64_t*>(p[1]);
    const Bits* x = reinterpret_cast<const Bits*>(p[2]);
    if (s[1] == 0) {  // one index for the whole run: copy a slice of x
      const Bits* src = x + index[0] * dim_stride;
      if (s[0] == 1 && s[2] == 1) {
        std::memcpy(y, src, static_cast<size_t>(n) * sizeof(Bits));
      } else {
        for (int64_t i = 0; i < n; ++i) y[i * s[0]] = src[i * s[2]];
      }
      return;
    }
    for (int64_t i = 0; i < n; ++i) y[i * s[0]] = x[i * s[2] + index[i * s[1]] * dim_stride];
  }
};

// Runs the gather loop for y with index/x views already shaped like y.
void gather_loop(const TensorView& y, const TensorView& index_view, const TensorView& x_view,
                 int64_t dim_stride) {
  const TensorView* ops[3] = {&y, &index_view, &x_view};
  const LoopPlan<3> plan = make_loop_plan(ops);
  visit_by_size(y.itemsize, [&](auto tag) {
    run_loop(plan, GatherLoop<typename decltype(tag)::type>{dim_stride});
  });
}

void run_gather(const sdk::GatherPlan& p) {
  if (p.y.numel() == 0) return;
  check_indices(p.index, p.bound, p.dim);
  gather_loop(p.y, p.index_view, p.x_view, p.dim_stride);
}

void index_select_impl(const OpArgs& args) { run_gather(sdk::plan_index_select(args)); }

void gather_impl(const OpArgs& args) { run_gather(sdk::plan_gather(args)); }

}  // namespace

namespace {
struct IndexCheckLoop {
  uint64_t bound;
  std::atomic<bool>* bad;
  void operator()(char* const* p, const int64_t* s, int64_t n) const {
    const int64_t* index = reinterpret_cast<const int64_t*>(p[0]);
    bool any = false;
    // Negative indices become huge unsigned values: one comparison covers both ends.
    for (int64_t i = 0; i < n; ++i) any |= static_cast<uint64_t>(index[i * s[0]]) >= bound;
    if (any) bad->store(true, std::memory_order_relaxed);
  }
};
}  // namespace

void check_indices(const TensorView& index, int64_t bound, int64_t dim) {
  const TensorView* ops[1] = {&index};
  const LoopPlan<1> plan = make_loop_plan(ops);
  std::atomic<bool> bad{false};
  run_loop(plan, IndexCheckLoop{static_cast<uint64_t>(bound), &bad});
  if (!bad.load()) return;
  // Rare path: find the first offender in logical order for the message.
  std::vector<int64_t> position(static_cast<size_t>(index.ndim), 0);
  const int64_t total = index.numel();
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t rest = flat, offset = 0;
    for (int32_t d = index.ndim - 1; d >= 0; --d) {
      position[static_cast<size_t>(d)] = rest % index.shape[d];
      rest /= index.shape[d];
      offset += position[static_cast<size_t>(d)] * index.strides[d];
    }
    const int64_t value = index.ptr<const int64_t>()[offset];
    if (value < 0 || value >= bound) {
      std::string where;
      for (int64_t v : position) {
        if (!where.empty()) where += ',';
        where += std::to_string(v);
      }
      throw sdk::Error(KILN_STATUS_INVALID_ARGUMENT,
                       sdk::str_cat("index ", value, " at position [", where,
                                    "] is out of range for dimension ", dim, " of size ", bound));
    }
  }
}

void add_indexing_kernels(KernelList& list) {
  list.push_back(catalogue_entry<op::index_select>(&run_kernel<index_select_impl>, nullptr,
                                                   KILN_KERNEL_STRIDED_INPUTS));
  list.push_back(
      catalogue_entry<op::gather>(&run_kernel<gather_impl>, nullptr, KILN_KERNEL_STRIDED_INPUTS));
}

}  // namespace kiln::cpu
