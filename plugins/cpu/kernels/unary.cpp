// Elementwise unary ops: the catalogue's unary functor ops, KILN_UNARY_POINTWISE_OPS
// (kiln/sdk/pointwise_ops.h, generated from api/ops.json), and the unary kernels
// registered by hand at the end of this file (ops with attributes, a bool result or
// two operands). Half types compute in float32.
#include <cmath>
#include <cstring>
#include <limits>

#include "elementwise.h"
#include "kiln/sdk/functors.h"
#include "kiln/sdk/pointwise.h"
#include "kiln/sdk/pointwise_ops.h"
#include "registry.h"

namespace kiln::cpu {

namespace {

using AllTypes = TypeList<float, double, float16, bfloat16, int32_t, int64_t, uint8_t, bool>;

using sdk::Clamp, sdk::GeluExact, sdk::GeluExactGrad, sdk::GeluTanh, sdk::GeluTanhGrad,
    sdk::LogicalNot, sdk::ReluGrad;  // kiln/sdk/functors.h

// y = Op(x) for the dtypes of the KILN_DTYPES_* mask `Dtypes`.
template <class Op, uint32_t Dtypes>
void unary_same_dtype(const OpArgs& args) {
  const sdk::UnaryOperands o = sdk::unary_operands(args);
  const TensorView &x = o.x, &y = o.y;
  const TensorView* ops[2] = {&y, &x};
  const LoopPlan<2> plan = make_loop_plan(ops);
  if (!sdk::visit_dtype_in<Dtypes>(x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_loop(plan, UnaryLoop<T, T, Op>{});
      })) {
    unsupported_dtype(x.dtype);
  }
}

void gelu_impl(const OpArgs& args) {
  if (sdk::gelu_approximate(args) == sdk::GeluApproximate::None) {
    return unary_same_dtype<GeluExact, KILN_DTYPES_FLOAT>(args);
  }
  unary_same_dtype<GeluTanh, KILN_DTYPES_FLOAT>(args);
}

// grad_x = Op(grad_y, second) for relu_backward (second = y) and gelu_backward (x).
template <class Op>
void backward_impl(const OpArgs& args, const char* second_name) {
  const sdk::GradOperands o = sdk::grad_operands(args, second_name);
  const TensorView* ops[3] = {&o.grad_x, &o.grad_y, &o.second};
  const LoopPlan<3> plan = make_loop_plan(ops);
  if (!visit_dtype<FloatTypes>(o.grad_y.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_loop(plan, BinaryLoop<T, T, Op>{});
      })) {
    unsupported_dtype(o.grad_y.dtype);
  }
}

void relu_backward_impl(const OpArgs& args) { backward_impl<ReluGrad>(args, "y"); }

void gelu_backward_impl(const OpArgs& args) {
  if (sdk::gelu_approximate(args) == sdk::GeluApproximate::None) {
    return backward_impl<GeluExactGrad>(args, "x");
  }
  backward_impl<GeluTanhGrad>(args, "x");
}

void clamp_impl(const OpArgs& args) {
  const sdk::UnaryOperands o = sdk::unary_operands(args);
  const TensorView &x = o.x, &y = o.y;
  const TensorView* ops[2] = {&y, &x};
  const LoopPlan<2> plan = make_loop_plan(ops);
  if (!visit_dtype<FloatTypes, SignedIntTypes>(x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        using C = compute_t<T>;
        run_loop(plan, UnaryLoop<T, T, Clamp<C>>{sdk::clamp_for<T>(args)});
      })) {
    unsupported_dtype(x.dtype);
  }
}

void logical_not_impl(const OpArgs& args) {
  const sdk::UnaryOperands o = sdk::unary_operands(args, KILN_DTYPE_BOOL);
  const TensorView &x = o.x, &y = o.y;
  const TensorView* ops[2] = {&y, &x};
  const LoopPlan<2> plan = make_loop_plan(ops);
  visit_dtype<AllTypes>(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    run_loop(plan, UnaryLoop<bool, T, LogicalNot>{});
  });
}

}  // namespace

void add_unary_kernels(KernelList& list) {
#define KILN_CPU_UNARY(name, Functor, dtypes) \
  list.push_back(catalogue_kernel<op::name>(&run_kernel<unary_same_dtype<sdk::Functor, dtypes>>));
  KILN_UNARY_POINTWISE_OPS(KILN_CPU_UNARY)
#undef KILN_CPU_UNARY
  list.push_back(catalogue_kernel<op::clamp>(&run_kernel<clamp_impl>));
  list.push_back(catalogue_kernel<op::gelu>(&run_kernel<gelu_impl>));
  list.push_back(catalogue_kernel<op::relu_backward>(&run_kernel<relu_backward_impl>));
  list.push_back(catalogue_kernel<op::gelu_backward>(&run_kernel<gelu_backward_impl>));
  list.push_back(
      catalogue_entry<op::logical_not>(&run_kernel<logical_not_impl>, nullptr, kStridedInOut));
}

}  // namespace kiln::cpu
