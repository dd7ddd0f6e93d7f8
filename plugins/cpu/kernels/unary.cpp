// Elementwise unary ops: neg, abs, sign, exp, log, sqrt, sin, cos, tanh, rsqrt,
// sigmoid, relu, gelu, clamp, logical_not, and the gradients relu_backward and
// gelu_backward. Half types compute in float32.
#include <cmath>
#include <cstring>
#include <limits>

#include "elementwise.h"
#include "kiln/sdk/functors.h"
#include "kiln/sdk/pointwise.h"
#include "registry.h"

namespace kiln::cpu {

namespace {

using AllTypes = TypeList<float, double, float16, bfloat16, int32_t, int64_t, uint8_t, bool>;

using sdk::Abs, sdk::Clamp, sdk::Cos, sdk::Exp, sdk::GeluExact, sdk::GeluExactGrad, sdk::GeluTanh,
    sdk::GeluTanhGrad, sdk::Log, sdk::LogicalNot, sdk::Neg, sdk::Relu, sdk::ReluGrad, sdk::Rsqrt,
    sdk::Sigmoid, sdk::Sign, sdk::Sin, sdk::Sqrt, sdk::Tanh;  // kiln/sdk/functors.h

template <class Op, class... Lists>
void unary_same_dtype(const OpArgs& args, const Op& op) {
  const sdk::UnaryOperands o = sdk::unary_operands(args);
  const Tensor &x = o.x, &y = o.y;
  const Tensor* ops[2] = {&y, &x};
  const LoopPlan<2> plan = make_loop_plan(ops);
  if (!dispatch<Lists...>(x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_loop(plan, UnaryLoop<T, T, Op>{op});
      })) {
    unsupported_dtype(x.dtype);
  }
}

template <class Op>
void float_impl(const OpArgs& args) {
  unary_same_dtype<Op, FloatTypes>(args, Op{});
}

template <class Op>
void signed_impl(const OpArgs& args) {
  unary_same_dtype<Op, FloatTypes, SignedIntTypes>(args, Op{});
}

void gelu_impl(const OpArgs& args) {
  if (sdk::gelu_approximate(args) == sdk::GeluApproximate::None) return float_impl<GeluExact>(args);
  float_impl<GeluTanh>(args);
}

// grad_x = Op(grad_y, second) for relu_backward (second = y) and gelu_backward (x).
template <class Op>
void backward_impl(const OpArgs& args, const char* second_name) {
  const sdk::GradOperands o = sdk::grad_operands(args, second_name);
  const Tensor* ops[3] = {&o.grad_x, &o.grad_y, &o.second};
  const LoopPlan<3> plan = make_loop_plan(ops);
  if (!dispatch<FloatTypes>(o.grad_y.dtype, [&](auto tag) {
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
  const Tensor &x = o.x, &y = o.y;
  const Tensor* ops[2] = {&y, &x};
  const LoopPlan<2> plan = make_loop_plan(ops);
  if (!dispatch<FloatTypes, SignedIntTypes>(x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        using C = compute_t<T>;
        run_loop(plan, UnaryLoop<T, T, Clamp<C>>{sdk::clamp_for<T>(args)});
      })) {
    unsupported_dtype(x.dtype);
  }
}

void logical_not_impl(const OpArgs& args) {
  const sdk::UnaryOperands o = sdk::unary_operands(args, KILN_DTYPE_BOOL);
  const Tensor &x = o.x, &y = o.y;
  const Tensor* ops[2] = {&y, &x};
  const LoopPlan<2> plan = make_loop_plan(ops);
  dispatch<AllTypes>(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    run_loop(plan, UnaryLoop<bool, T, LogicalNot>{});
  });
}

}  // namespace

void add_unary_kernels(KernelList& list) {
  namespace op = sdk::catalogue;
  list.push_back(catalogue_kernel<op::neg>(&run_kernel<signed_impl<Neg>>, kStridedInOut));
  list.push_back(catalogue_kernel<op::abs>(&run_kernel<signed_impl<Abs>>, kStridedInOut));
  list.push_back(catalogue_kernel<op::sign>(&run_kernel<signed_impl<Sign>>, kStridedInOut));
  list.push_back(catalogue_kernel<op::relu>(&run_kernel<signed_impl<Relu>>, kStridedInOut));
  list.push_back(catalogue_kernel<op::clamp>(&run_kernel<clamp_impl>, kStridedInOut));
  list.push_back(catalogue_kernel<op::exp>(&run_kernel<float_impl<Exp>>, kStridedInOut));
  list.push_back(catalogue_kernel<op::log>(&run_kernel<float_impl<Log>>, kStridedInOut));
  list.push_back(catalogue_kernel<op::sqrt>(&run_kernel<float_impl<Sqrt>>, kStridedInOut));
  list.push_back(catalogue_kernel<op::sin>(&run_kernel<float_impl<Sin>>, kStridedInOut));
  list.push_back(catalogue_kernel<op::cos>(&run_kernel<float_impl<Cos>>, kStridedInOut));
  list.push_back(catalogue_kernel<op::tanh>(&run_kernel<float_impl<Tanh>>, kStridedInOut));
  list.push_back(catalogue_kernel<op::rsqrt>(&run_kernel<float_impl<Rsqrt>>, kStridedInOut));
  list.push_back(catalogue_kernel<op::sigmoid>(&run_kernel<float_impl<Sigmoid>>, kStridedInOut));
  list.push_back(catalogue_kernel<op::gelu>(&run_kernel<gelu_impl>, kStridedInOut));
  list.push_back(
      catalogue_kernel<op::relu_backward>(&run_kernel<relu_backward_impl>, kStridedInOut));
  list.push_back(catalogue_kernel<op::gelu_backward>(&run_kernel<gelu_backward_impl>,
                                                     KILN_KERNEL_STRIDED_INPUTS));
  list.push_back({"kiln.logical_not", &run_kernel<logical_not_impl>, nullptr, kStridedInOut});
}

}  // namespace kiln::cpu
