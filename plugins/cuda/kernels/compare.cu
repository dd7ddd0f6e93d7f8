// The comparisons and binary logical ops (the catalogue's ops with promote "compare" or
// "logical" in api/ops.json, registered at the end of this file), and where. They take
// any one input dtype and write bool; half types compare as float32, which is exact.
#include "kernels/elementwise.cuh"
#include "kernels/registry.h"
#include "kiln/sdk/functors.h"
#include "kiln/sdk/pointwise.h"

namespace kiln::cuda {

namespace {

using sdk::Eq, sdk::Ge, sdk::Gt, sdk::Le, sdk::LogicalAnd, sdk::LogicalOr, sdk::Lt,
    sdk::Ne;  // kiln/sdk/functors.h

template <class Op>
void predicate_impl(const OpArgs& args, const Launch& launch) {
  args.expect_counts(2, 1);
  const TensorView a = args.input(0), b = args.input(1), y = args.output(0);
  expect_same_shape(a, y, "a");
  expect_same_shape(b, y, "b");
  expect_dtype(b, a.dtype, "b");
  expect_dtype(y, KILN_DTYPE_BOOL, "y");
  const TensorView* ops[3] = {&y, &a, &b};
  if (!visit_dtype<AllTypes>(a.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_elementwise<bool, T, T>(launch, ops, Op{});
      })) {
    unsupported_dtype(a.dtype);
  }
}

// y = c ? a : b on raw element bits: selection never needs to know the dtype.
struct Select {
  template <class Bits>
  __device__ Bits operator()(bool c, Bits a, Bits b) const {
    return c ? a : b;
  }
};

void where_impl(const OpArgs& args, const Launch& launch) {
  const sdk::WhereOperands o = sdk::where_operands(args);
  const TensorView& y = o.y;
  const TensorView* ops[4] = {&o.y, &o.condition, &o.a, &o.b};
  visit_by_size(y.itemsize, [&](auto tag) {
    using Bits = typename decltype(tag)::type;
    run_elementwise<Bits, bool, Bits, Bits>(launch, ops, Select{});
  });
}

}  // namespace

void add_compare_kernels(KernelList& list) {
  list.push_back(catalogue_entry<op::eq>(&predicate_impl<Eq>, nullptr, kStridedInOut));
  list.push_back(catalogue_entry<op::ne>(&predicate_impl<Ne>, nullptr, kStridedInOut));
  list.push_back(catalogue_entry<op::lt>(&predicate_impl<Lt>, nullptr, kStridedInOut));
  list.push_back(catalogue_entry<op::le>(&predicate_impl<Le>, nullptr, kStridedInOut));
  list.push_back(catalogue_entry<op::gt>(&predicate_impl<Gt>, nullptr, kStridedInOut));
  list.push_back(catalogue_entry<op::ge>(&predicate_impl<Ge>, nullptr, kStridedInOut));
  list.push_back(
      catalogue_entry<op::logical_and>(&predicate_impl<LogicalAnd>, nullptr, kStridedInOut));
  list.push_back(
      catalogue_entry<op::logical_or>(&predicate_impl<LogicalOr>, nullptr, kStridedInOut));
  list.push_back(catalogue_entry<op::where>(&where_impl, nullptr, kStridedInOut));
}

}  // namespace kiln::cuda
