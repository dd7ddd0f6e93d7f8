// kiln/sdk/norm.h — the operands of kiln.batch_norm, kiln.layer_norm and their
// backward ops, checked once for every plugin (contiguous operands of x's dtype and
// the sizes OPS.md gives), with the two views the kernels compute over.
#ifndef KILN_SDK_NORM_H
#define KILN_SDK_NORM_H

#include <cstdint>
#include <utility>

#include "kiln/sdk/op_args.h"
#include "kiln/sdk/op_attrs.h"

namespace kiln::sdk {

/// Batch norm's view of x [N, C, *]: N blocks of C channels of S contiguous elements.
struct ChannelLayout {
  int64_t n, c, s;
  int64_t count() const { return n * s; }  // elements per channel
  int64_t at(int64_t batch, int64_t channel) const { return (batch * c + channel) * s; }
};

inline ChannelLayout channel_layout(const TensorView& x) {
  KILN_SDK_CHECK_ARG(x.ndim >= 2, "x must be [N, C, *], got ", shape_string(x));
  expect_contiguous(x, "x");
  int64_t s = 1;
  for (int32_t d = 2; d < x.ndim; ++d) s *= x.shape[d];
  return {x.shape[0], x.shape[1], s};
}

/// Layer norm's view of x: M rows of D, D the product of the last `normalized_ndim` dims.
struct RowLayout {
  int64_t m, d;
};

inline RowLayout row_layout(const OpArgs& args, const TensorView& x) {
  // layer_norm's and layer_norm_backward's attribute lists differ but share this one
  const int64_t k = attrs::layer_norm_backward::read(args).normalized_ndim;
  KILN_SDK_CHECK_ARG(k >= 1 && k <= x.ndim, "normalized_ndim ", k, " does not fit x ",
                     shape_string(x));
  expect_contiguous(x, "x");
  int64_t d = 1;
  for (int32_t i = x.ndim - static_cast<int32_t>(k); i < x.ndim; ++i) d *= x.shape[i];
  return {d == 0 ? 0 : x.numel() / d, d};
}

namespace detail {

using NamedTensor = std::pair<const TensorView*, const char*>;

inline void expect_channel_vectors(std::initializer_list<NamedTensor> vectors,
                                   const ChannelLayout& l, kiln_dtype dtype) {
  for (const NamedTensor& v : vectors) {
    expect_shape(*v.first, {l.c}, v.second);
    expect_dtype(*v.first, dtype, v.second);
  }
}

inline void expect_like_x(std::initializer_list<NamedTensor> tensors, const TensorView& x) {
  for (const NamedTensor& v : tensors) {
    expect_same_shape(*v.first, x, v.second);
    expect_contiguous(*v.first, v.second);
    expect_dtype(*v.first, x.dtype, v.second);
  }
}

// `n` contiguous elements of `dtype` (layer norm's operands may have any shape).
inline void expect_numel(std::initializer_list<NamedTensor> tensors, int64_t n, kiln_dtype dtype) {
  for (const NamedTensor& v : tensors) {
    KILN_SDK_CHECK_ARG(v.first->numel() == n, v.second, " has ", v.first->numel(),
                       " elements, expected ", n);
    expect_contiguous(*v.first, v.second);
    expect_dtype(*v.first, dtype, v.second);
  }
}

}  // namespace detail

/// kiln.batch_norm: x, weight, bias in; y, mean, invstd, running_mean, running_var out.
struct BatchNorm {
  TensorView x, weight, bias, y, mean, invstd, running_mean, running_var;
  double momentum, eps;
  ChannelLayout layout;
};

inline BatchNorm batch_norm_operands(const OpArgs& args) {
  args.expect_counts(3, 5);
  const auto a = attrs::batch_norm::read(args);
  BatchNorm b{args.input(0),
              args.input(1),
              args.input(2),
              args.output(0),
              args.output(1),
              args.output(2),
              args.output(3),
              args.output(4),
              a.momentum,
              a.eps,
              {}};
  b.layout = channel_layout(b.x);
  detail::expect_like_x({{&b.y, "y"}}, b.x);
  detail::expect_channel_vectors({{&b.weight, "weight"},
                                  {&b.bias, "bias"},
                                  {&b.mean, "mean"},
                                  {&b.invstd, "invstd"},
                                  {&b.running_mean, "running_mean"},
                                  {&b.running_var, "running_var"}},
                                 b.layout, b.x.dtype);
  return b;
}

/// kiln.batch_norm_backward and kiln.layer_norm_backward: grad_y, x, weight, mean,
/// invstd in; grad_x, grad_weight, grad_bias out; over `Layout`.
template <class Layout>
struct NormBackward {
  TensorView grad_y, x, weight, mean, invstd, grad_x, grad_weight, grad_bias;
  Layout layout;
};
using BatchNormBackward = NormBackward<ChannelLayout>;
using LayerNormBackward = NormBackward<RowLayout>;

namespace detail {
template <class Layout>
NormBackward<Layout> backward_tensors(const OpArgs& args) {
  args.expect_counts(5, 3);
  return {args.input(0),  args.input(1),  args.input(2),
          args.input(3),  args.input(4),  args.output(0),
          args.output(1), args.output(2), {}};
}
}  // namespace detail

inline BatchNormBackward batch_norm_backward_operands(const OpArgs& args) {
  BatchNormBackward b = detail::backward_tensors<ChannelLayout>(args);
  b.layout = channel_layout(b.x);
  detail::expect_like_x({{&b.grad_y, "grad_y"}, {&b.grad_x, "grad_x"}}, b.x);
  detail::expect_channel_vectors({{&b.weight, "weight"},
                                  {&b.mean, "mean"},
                                  {&b.invstd, "invstd"},
                                  {&b.grad_weight, "grad_weight"},
                                  {&b.grad_bias, "grad_bias"}},
                                 b.layout, b.x.dtype);
  return b;
}

/// kiln.layer_norm: x, weight, bias in; y, mean, invstd out.
struct LayerNorm {
  TensorView x, weight, bias, y, mean, invstd;
  double eps;
  RowLayout layout;
};

inline LayerNorm layer_norm_operands(const OpArgs& args) {
  args.expect_counts(3, 3);
  LayerNorm n{args.input(0),
              args.input(1),
              args.input(2),
              args.output(0),
              args.output(1),
              args.output(2),
              attrs::layer_norm::read(args).eps,
              {}};
  n.layout = row_layout(args, n.x);
  const RowLayout& l = n.layout;
  detail::expect_numel({{&n.y, "y"}}, l.m * l.d, n.x.dtype);
  detail::expect_numel({{&n.weight, "weight"}, {&n.bias, "bias"}}, l.d, n.x.dtype);
  detail::expect_numel({{&n.mean, "mean"}, {&n.invstd, "invstd"}}, l.m, n.x.dtype);
  return n;
}

inline LayerNormBackward layer_norm_backward_operands(const OpArgs& args) {
  LayerNormBackward n = detail::backward_tensors<RowLayout>(args);
  n.layout = row_layout(args, n.x);
  const RowLayout& l = n.layout;
  detail::expect_numel({{&n.grad_y, "grad_y"}, {&n.grad_x, "grad_x"}}, l.m * l.d, n.x.dtype);
  detail::expect_numel(
      {{&n.weight, "weight"}, {&n.grad_weight, "grad_weight"}, {&n.grad_bias, "grad_bias"}}, l.d,
      n.x.dtype);
  detail::expect_numel({{&n.mean, "mean"}, {&n.invstd, "invstd"}}, l.m, n.x.dtype);
  return n;
}

/// `supports` of the four: float32 or float64 x.
inline int32_t supports_norm(void*, const kiln_op_args* args) {
  const kiln_dtype d = input_dtype(args, 0);
  return d == KILN_DTYPE_FLOAT32 || d == KILN_DTYPE_FLOAT64;
}

}  // namespace kiln::sdk

#endif  // KILN_SDK_NORM_H
