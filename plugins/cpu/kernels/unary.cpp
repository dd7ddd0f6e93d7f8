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
  list.push_back({"kiln.neg", &run_kernel<signed_impl<Neg>>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::neg>, kStridedInOut});
  list.push_back({"kiln.abs", &run_kernel<signed_impl<Abs>>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::abs>, kStridedInOut});
  list.push_back({"kiln.sign", &run_kernel<signed_impl<Sign>>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::sign>, kStridedInOut});
  list.push_back({"kiln.relu", &run_kernel<signed_impl<Relu>>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::relu>, kStridedInOut});
  list.push_back({"kiln.clamp", &run_kernel<clamp_impl>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::clamp>, kStridedInOut});
  list.push_back({"kiln.exp", &run_kernel<float_impl<Exp>>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::exp>, kStridedInOut});
  list.push_back({"kiln.log", &run_kernel<float_impl<Log>>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::log>, kStridedInOut});
  list.push_back({"kiln.sqrt", &run_kernel<float_impl<Sqrt>>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::sqrt>, kStridedInOut});
  list.push_back({"kiln.sin", &run_kernel<float_impl<Sin>>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::sin>, kStridedInOut});
  list.push_back({"kiln.cos", &run_kernel<float_impl<Cos>>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::cos>, kStridedInOut});
  list.push_back({"kiln.tanh", &run_kernel<float_impl<Tanh>>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::tanh>, kStridedInOut});
  list.push_back({"kiln.rsqrt", &run_kernel<float_impl<Rsqrt>>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::rsqrt>, kStridedInOut});
  list.push_back({"kiln.sigmoid", &run_kernel<float_impl<Sigmoid>>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::sigmoid>, kStridedInOut});
  list.push_back({"kiln.gelu", &run_kernel<gelu_impl>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::gelu>, kStridedInOut});
  list.push_back({"kiln.relu_backward", &run_kernel<relu_backward_impl>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::relu_backward>, kStridedInOut});
  list.push_back({"kiln.gelu_backward", &run_kernel<gelu_backward_impl>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::gelu_backward>,
                  KILN_KERNEL_STRIDED_INPUTS});
  list.push_back({"kiln.logical_not", &run_kernel<logical_not_impl>, nullptr, kStridedInOut});
}

}  // namespace kiln::cpu
