// Elementwise arithmetic: add, sub, mul, div, pow, maximum, minimum.
#include <cmath>

#include "binary_common.h"
#include "kiln/sdk/functors.h"
#include "registry.h"

namespace kiln::cpu {

namespace {

using sdk::Add, sdk::Div, sdk::Maximum, sdk::Minimum, sdk::Mul, sdk::Pow,
    sdk::Sub;  // kiln/sdk/functors.h

template <class Op, class... Lists>
void arithmetic_impl(const OpArgs& args) {
  const BinaryOperands o(args);
  expect_dtype(o.y, o.a.dtype, "y");
  if (!dispatch<Lists...>(o.a.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_loop(o.plan, BinaryLoop<T, T, Op>{});
      })) {
    unsupported_dtype(o.a.dtype);
  }
}

template <class Op>
constexpr kiln_kernel_fn float_int = &run_kernel<arithmetic_impl<Op, FloatTypes, IntTypes>>;
template <class Op>
constexpr kiln_kernel_fn float_only = &run_kernel<arithmetic_impl<Op, FloatTypes>>;

}  // namespace

void add_binary_kernels(KernelList& list) {
  // The dtypes each op takes are the catalogue's (api/ops.json).
  namespace op = sdk::catalogue;
  list.push_back(catalogue_kernel<op::add>(float_int<Add>, kStridedInOut));
  list.push_back(catalogue_kernel<op::sub>(float_int<Sub>, kStridedInOut));
  list.push_back(catalogue_kernel<op::mul>(float_int<Mul>, kStridedInOut));
  list.push_back(catalogue_kernel<op::maximum>(float_int<Maximum>, kStridedInOut));
  list.push_back(catalogue_kernel<op::minimum>(float_int<Minimum>, kStridedInOut));
  list.push_back(catalogue_kernel<op::div>(float_only<Div>, kStridedInOut));
  list.push_back(catalogue_kernel<op::pow>(float_only<Pow>, kStridedInOut));
}

}  // namespace kiln::cpu
