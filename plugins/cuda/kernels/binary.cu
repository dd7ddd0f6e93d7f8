// Elementwise arithmetic: add, sub, mul, div, pow, maximum, minimum. Integers wrap
// (unsigned arithmetic keeps that defined); maximum/minimum give NaN when either
// operand is NaN.
#include "kernels/elementwise.cuh"
#include "kernels/registry.h"
#include "kiln/sdk/functors.h"

namespace kiln::cuda {

namespace {

using sdk::Add, sdk::Div, sdk::Maximum, sdk::Minimum, sdk::Mul, sdk::Pow,
    sdk::Sub;  // kiln/sdk/functors.h

template <class Op, class... Lists>
void arithmetic_impl(const OpArgs& args, const Launch& launch) {
  args.expect_counts(2, 1);
  const Tensor a = args.input(0), b = args.input(1), y = args.output(0);
  expect_same_shape(a, y, "a");
  expect_same_shape(b, y, "b");
  expect_dtype(b, a.dtype, "b");
  expect_dtype(y, a.dtype, "y");
  const Tensor* ops[3] = {&y, &a, &b};
  if (!dispatch<Lists...>(a.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_elementwise<T, T, T>(launch, ops, Op{});
      })) {
    unsupported_dtype(a.dtype);
  }
}

template <class Op>
constexpr KernelImpl float_int = &arithmetic_impl<Op, FloatTypes, IntTypes>;
template <class Op>
constexpr KernelImpl float_only = &arithmetic_impl<Op, FloatTypes>;

}  // namespace

void add_binary_kernels(KernelList& list) {
  namespace op = sdk::catalogue;
  list.push_back(catalogue_kernel<op::add>(float_int<Add>, kStridedInOut));
  list.push_back(catalogue_kernel<op::sub>(float_int<Sub>, kStridedInOut));
  list.push_back(catalogue_kernel<op::mul>(float_int<Mul>, kStridedInOut));
  list.push_back(catalogue_kernel<op::maximum>(float_int<Maximum>, kStridedInOut));
  list.push_back(catalogue_kernel<op::minimum>(float_int<Minimum>, kStridedInOut));
  list.push_back(catalogue_kernel<op::div>(float_only<Div>, kStridedInOut));
  list.push_back(catalogue_kernel<op::pow>(float_only<Pow>, kStridedInOut));
}

}  // namespace kiln::cuda
