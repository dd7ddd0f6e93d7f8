// The comparisons and binary logical ops (the catalogue's ops with promote "compare" or
// "logical" in api/ops.json, registered at the end of this file), and where. They take
// any one input dtype and write bool.
#include "binary_common.h"
#include "kiln/sdk/functors.h"
#include "kiln/sdk/pointwise.h"
#include "registry.h"

namespace kiln::cpu {

namespace {

using sdk::Eq, sdk::Ge, sdk::Gt, sdk::Le, sdk::LogicalAnd, sdk::LogicalOr, sdk::Lt,
    sdk::Ne;  // kiln/sdk/functors.h

using AllTypes = TypeList<float, double, float16, bfloat16, int32_t, int64_t, uint8_t, bool>;

template <class Op>
void predicate_impl(const OpArgs& args) {
  const BinaryOperands o(args);
  expect_dtype(o.y, KILN_DTYPE_BOOL, "y");
  visit_dtype<AllTypes>(o.a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    run_loop(o.plan, BinaryLoop<bool, T, Op>{});
  });
}

// y = c ? a : b on raw element bits: selection never needs to know the dtype.
template <class Bits>
struct WhereLoop {
  void operator()(char* const* p, const int64_t* s, int64_t n) const {
    Bits* y = reinterpret_cast<Bits*>(p[0]);
    const bool* c = reinterpret_cast<const bool*>(p[1]);
    const Bits* a = reinterpret_cast<const Bits*>(p[2]);
    const Bits* b = reinterpret_cast<const Bits*>(p[3]);
    if (s[0] == 1 && s[1] == 1 && s[2] == 1 && s[3] == 1) {
      contiguous(y, c, a, b, n);
    } else {
      for (int64_t i = 0; i < n; ++i) y[i * s[0]] = c[i * s[1]] ? a[i * s[2]] : b[i * s[3]];
    }
  }
  // Both loads are unconditional so the select vectorizes as a blend.
  static void contiguous(Bits* __restrict y, const bool* __restrict c, const Bits* __restrict a,
                         const Bits* __restrict b, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      const Bits av = a[i];
      const Bits bv = b[i];
      y[i] = c[i] ? av : bv;
    }
  }
};

void where_impl(const OpArgs& args) {
  const sdk::WhereOperands o = sdk::where_operands(args);
  const TensorView& y = o.y;
  const TensorView* ops[4] = {&o.y, &o.condition, &o.a, &o.b};
  const LoopPlan<4> plan = make_loop_plan(ops);
  visit_by_size(y.itemsize,
                [&](auto tag) { run_loop(plan, WhereLoop<typename decltype(tag)::type>{}); });
}

}  // namespace

void add_compare_kernels(KernelList& list) {
  list.push_back(catalogue_entry<op::eq>(&run_kernel<predicate_impl<Eq>>, nullptr, kStridedInOut));
  list.push_back(catalogue_entry<op::ne>(&run_kernel<predicate_impl<Ne>>, nullptr, kStridedInOut));
  list.push_back(catalogue_entry<op::lt>(&run_kernel<predicate_impl<Lt>>, nullptr, kStridedInOut));
  list.push_back(catalogue_entry<op::le>(&run_kernel<predicate_impl<Le>>, nullptr, kStridedInOut));
  list.push_back(catalogue_entry<op::gt>(&run_kernel<predicate_impl<Gt>>, nullptr, kStridedInOut));
  list.push_back(catalogue_entry<op::ge>(&run_kernel<predicate_impl<Ge>>, nullptr, kStridedInOut));
  list.push_back(catalogue_entry<op::logical_and>(&run_kernel<predicate_impl<LogicalAnd>>, nullptr,
                                                  kStridedInOut));
  list.push_back(catalogue_entry<op::logical_or>(&run_kernel<predicate_impl<LogicalOr>>, nullptr,
                                                 kStridedInOut));
  list.push_back(catalogue_entry<op::where>(&run_kernel<where_impl>, nullptr, kStridedInOut));
}

}  // namespace kiln::cpu
