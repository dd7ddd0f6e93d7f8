// Convolution and pooling: shape checks, one forward kernel, one recorded node
// whose backward is a catalogue kernel too.

#include <array>

#include "autograd/record.h"
#include "dispatch/autocast.h"
#include "kiln/nn/functional.h"
#include "kiln/ops.h"
#include "ops/common.h"

namespace kiln::nn::functional {

using detail::OpId;
namespace ag = detail::autograd_impl;
using Grads = std::vector<Tensor>;
using Saved = std::vector<Tensor>;

namespace {

// An INTS[2] attribute's value.
std::array<int64_t, 2> ints(Size2 s) { return {s.h, s.w}; }

// An unbatched [C, H, W] input runs as a batch of one, as in PyTorch.
bool is_unbatched(const Tensor& x, const char* op) {
  detail::impl_of(x, op);
  return x.dim() == 3;
}

void check_image(const Tensor& x, const char* op) {
  detail::impl_of(x, op);
  KILN_CHECK(x.dim() == 4, op, ": expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got shape ",
             x.shape());
  KILN_CHECK(is_floating(x.dtype()), op, ": expected a floating-point input, got ", x.dtype());
}

void check_positive(Size2 s, const char* what, const char* op, int64_t min = 1) {
  KILN_CHECK(s.h >= min && s.w >= min, op, ": ", what, " must be >= ", min, ", got (", s.h, ", ",
             s.w, ")");
}

// a / b rounded down (b > 0). Output sizes divide a span that is negative when the
// window is larger than the padded input; rounding it toward zero, as C++ does, would
// make an output of such an input instead of the error PyTorch gives.
int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && a < 0 ? 1 : 0); }

int64_t conv_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return floor_div(in + 2 * p - d * (k - 1) - 1, s) + 1;
}

// PyTorch's pooling_output_shape: with ceil_mode a last window that would start in
// the right padding is dropped.
int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t span = in + 2 * p - d * (k - 1) - 1;
  int64_t out = floor_div(span + (ceil_mode ? s - 1 : 0), s) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

// "Output size is too small" (PyTorch's words) with every size that made it so.
void check_pool_out(int64_t ho, int64_t wo, const Tensor& x, Size2 kernel, Size2 stride,
                    Size2 padding, Size2 dilation, const char* op) {
  KILN_CHECK(ho > 0 && wo > 0, op, ": output size is too small: the input ", x.shape(),
             " with kernel (", kernel.h, ", ", kernel.w, "), stride (", stride.h, ", ", stride.w,
             "), padding (", padding.h, ", ", padding.w, ") and dilation (", dilation.h, ", ",
             dilation.w, ") gives ", ho, "x", wo);
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Size2 stride,
              Size2 padding, Size2 dilation, int64_t groups) {
  if (detail::autocast_on) {
    Tensor xc = x, wc = weight, bc = bias;
    if (detail::autocast_inputs(OpId::conv2d, {&xc, &wc, &bc}))
      return conv2d(xc, wc, bc, stride, padding, dilation, groups);
  }
  if (is_unbatched(x, "conv2d"))
    return conv2d(x.unsqueeze(0), weight, bias, stride, padding, dilation, groups).squeeze(0);
  check_image(x, "conv2d");
  detail::check_same_device("conv2d", {&x, &weight});
  KILN_CHECK(weight.dim() == 4, "conv2d: expected a 4-D weight [O, C/groups, kH, kW], got shape ",
             weight.shape());
  check_positive(stride, "stride", "conv2d");
  check_positive(dilation, "dilation", "conv2d");
  check_positive(padding, "padding", "conv2d", 0);
  KILN_CHECK(groups >= 1, "conv2d: groups must be >= 1, got ", groups);
  int64_t n = x.size(0), c = x.size(1), o = weight.size(0);
  KILN_CHECK(c == weight.size(1) * groups, "conv2d: input has ", c, " channels but weight ",
             weight.shape(), " with groups=", groups, " expects ", weight.size(1) * groups);
  KILN_CHECK(o % groups == 0, "conv2d: ", o,
             " output channels are not divisible by groups=", groups);
  KILN_CHECK(x.dtype() == weight.dtype(), "conv2d: input is ", x.dtype(), " but weight is ",
             weight.dtype());
  int64_t ho = conv_out(x.size(2), weight.size(2), stride.h, padding.h, dilation.h);
  int64_t wo = conv_out(x.size(3), weight.size(3), stride.w, padding.w, dilation.w);
  KILN_CHECK(ho > 0 && wo > 0, "conv2d: the input ", x.shape(), " padded by (", padding.h, ", ",
             padding.w, ") is ", x.size(2) + 2 * padding.h, "x", x.size(3) + 2 * padding.w,
             ", smaller than the kernel ", weight.shape(), " dilated by (", dilation.h, ", ",
             dilation.w, ")");
  Tensor b = bias;
  if (b.defined()) {
    detail::check_same_device("conv2d", {&x, &b});
    KILN_CHECK(b.dim() == 1 && b.size(0) == o, "conv2d: expected a bias of shape [", o, "], got ",
               b.shape());
  }
  Tensor xc = x.contiguous(), wc = weight.contiguous();
  Tensor bc = b.defined() ? b.to(x.dtype()).contiguous()
                          : zeros({o}, TensorOptions(x.dtype()).device(x.device()));
  Tensor y = detail::empty_on(x, {n, o, ho, wo}, x.dtype());
  const detail::attrs::conv2d attrs{.stride = ints(stride),
                                    .padding = ints(padding),
                                    .dilation = ints(dilation),
                                    .groups = groups,
                                    .precision = detail::matmul_precision()};
  detail::dispatch(attrs, {xc.impl().get(), wc.impl().get(), bc.impl().get()}, {y.impl().get()});
  if (ag::needs_grad({&x, &weight, &b})) {
    bool gx = x.requires_grad(), gw = weight.requires_grad(), gb = ag::requires_grad(b);
    ag::record("Conv2dBackward", y, {&x, &weight, &b}, {xc, wc},
               [=](const Saved& s, const Tensor& g) -> Grads {
                 Tensor gc = g.contiguous();
                 const char* precision = detail::matmul_precision();  // as set when backward runs
                 Grads grads(3);
                 if (gx) {
                   grads[0] = empty_like(s[0]);
                   detail::dispatch(detail::attrs::conv2d_backward_input{.stride = attrs.stride,
                                                                         .padding = attrs.padding,
                                                                         .dilation = attrs.dilation,
                                                                         .groups = groups,
                                                                         .precision = precision},
                                    {gc.impl().get(), s[1].impl().get()}, {grads[0].impl().get()});
                 }
                 if (gw) {
                   grads[1] = empty_like(s[1]);
                   detail::dispatch(
                       detail::attrs::conv2d_backward_weight{.stride = attrs.stride,
                                                             .padding = attrs.padding,
                                                             .dilation = attrs.dilation,
                                                             .groups = groups,
                                                             .precision = precision},
                       {gc.impl().get(), s[0].impl().get()}, {grads[1].impl().get()});
                 }
                 if (gb) grads[2] = g.sum({0, 2, 3});
                 return grads;
               });
  }
  return y;
}

Tensor max_pool2d(const Tensor& x, Size2 kernel_size, std::optional<Size2> stride, Size2 padding,
                  Size2 dilation, bool ceil_mode) {
  if (is_unbatched(x, "max_pool2d"))
    return max_pool2d(x.unsqueeze(0), kernel_size, stride, padding, dilation, ceil_mode).squeeze(0);
  check_image(x, "max_pool2d");
  Size2 s = stride.value_or(kernel_size);
  check_positive(kernel_size, "kernel_size", "max_pool2d");
  check_positive(s, "stride", "max_pool2d");
  check_positive(dilation, "dilation", "max_pool2d");
  KILN_CHECK(padding.h >= 0 && padding.w >= 0 && 2 * padding.h <= kernel_size.h &&
                 2 * padding.w <= kernel_size.w,
             "max_pool2d: padding (", padding.h, ", ", padding.w,
             ") must be at most half the kernel size (", kernel_size.h, ", ", kernel_size.w, ")");
  int64_t ho = pool_out(x.size(2), kernel_size.h, s.h, padding.h, dilation.h, ceil_mode);
  int64_t wo = pool_out(x.size(3), kernel_size.w, s.w, padding.w, dilation.w, ceil_mode);
  check_pool_out(ho, wo, x, kernel_size, s, padding, dilation, "max_pool2d");
  Tensor xc = x.contiguous();
  Tensor y = detail::empty_on(x, {x.size(0), x.size(1), ho, wo}, x.dtype());
  Tensor indices = detail::empty_on(x, {x.size(0), x.size(1), ho, wo}, DType::Int64);
  const detail::attrs::max_pool2d attrs{.kernel_size = ints(kernel_size),
                                        .stride = ints(s),
                                        .padding = ints(padding),
                                        .dilation = ints(dilation),
                                        .ceil_mode = ceil_mode};
  detail::dispatch(attrs, {xc.impl().get()}, {y.impl().get(), indices.impl().get()});
  if (ag::needs_grad({&x}))
    ag::record("MaxPool2dBackward", y, {&x}, {indices},
               [=, shape = x.shape().vec()](const Saved& sv, const Tensor& g) -> Grads {
                 Tensor dx = empty(shape, TensorOptions(g.dtype()).device(g.device()));
                 Tensor gc = g.contiguous();
                 detail::dispatch(
                     detail::attrs::max_pool2d_backward{.kernel_size = attrs.kernel_size,
                                                        .stride = attrs.stride,
                                                        .padding = attrs.padding,
                                                        .dilation = attrs.dilation,
                                                        .ceil_mode = ceil_mode},
                     {gc.impl().get(), sv[0].impl().get()}, {dx.impl().get()});
                 return {dx};
               });
  return y;
}

Tensor avg_pool2d(const Tensor& x, Size2 kernel_size, std::optional<Size2> stride, Size2 padding,
                  bool ceil_mode, bool count_include_pad) {
  if (is_unbatched(x, "avg_pool2d"))
    return avg_pool2d(x.unsqueeze(0), kernel_size, stride, padding, ceil_mode, count_include_pad)
        .squeeze(0);
  check_image(x, "avg_pool2d");
  Size2 s = stride.value_or(kernel_size);
  check_positive(kernel_size, "kernel_size", "avg_pool2d");
  check_positive(s, "stride", "avg_pool2d");
  KILN_CHECK(padding.h >= 0 && padding.w >= 0 && 2 * padding.h <= kernel_size.h &&
                 2 * padding.w <= kernel_size.w,
             "avg_pool2d: padding (", padding.h, ", ", padding.w,
             ") must be at most half the kernel size (", kernel_size.h, ", ", kernel_size.w, ")");
  int64_t ho = pool_out(x.size(2), kernel_size.h, s.h, padding.h, 1, ceil_mode);
  int64_t wo = pool_out(x.size(3), kernel_size.w, s.w, padding.w, 1, ceil_mode);
  check_pool_out(ho, wo, x, kernel_size, s, padding, 1, "avg_pool2d");
  Tensor xc = x.contiguous();
  Tensor y = detail::empty_on(x, {x.size(0), x.size(1), ho, wo}, x.dtype());
  const detail::attrs::avg_pool2d attrs{.kernel_size = ints(kernel_size),
                                        .stride = ints(s),
                                        .padding = ints(padding),
                                        .ceil_mode = ceil_mode,
                                        .count_include_pad = count_include_pad};
  detail::dispatch(attrs, {xc.impl().get()}, {y.impl().get()});
  if (ag::needs_grad({&x}))
    ag::record("AvgPool2dBackward", y, {&x}, {},
               [=, shape = x.shape().vec()](const Saved&, const Tensor& g) -> Grads {
                 Tensor dx = empty(shape, TensorOptions(g.dtype()).device(g.device()));
                 Tensor gc = g.contiguous();
                 detail::dispatch(
                     detail::attrs::avg_pool2d_backward{.kernel_size = attrs.kernel_size,
                                                        .stride = attrs.stride,
                                                        .padding = attrs.padding,
                                                        .ceil_mode = ceil_mode,
                                                        .count_include_pad = count_include_pad},
                     {gc.impl().get()}, {dx.impl().get()});
                 return {dx};
               });
  return y;
}

Tensor adaptive_avg_pool2d(const Tensor& x, Size2 output_size) {
  if (is_unbatched(x, "adaptive_avg_pool2d"))
    return adaptive_avg_pool2d(x.unsqueeze(0), output_size).squeeze(0);
  check_image(x, "adaptive_avg_pool2d");
  check_positive(output_size, "output_size", "adaptive_avg_pool2d");
  Tensor xc = x.contiguous();
  Tensor y = detail::empty_on(x, {x.size(0), x.size(1), output_size.h, output_size.w}, x.dtype());
  detail::dispatch(OpId::adaptive_avg_pool2d, {xc.impl().get()}, {y.impl().get()});
  if (ag::needs_grad({&x}))
    ag::record("AdaptiveAvgPool2dBackward", y, {&x}, {},
               [shape = x.shape().vec()](const Saved&, const Tensor& g) -> Grads {
                 Tensor dx = empty(shape, TensorOptions(g.dtype()).device(g.device()));
                 Tensor gc = g.contiguous();
                 detail::dispatch(OpId::adaptive_avg_pool2d_backward, {gc.impl().get()},
                                  {dx.impl().get()});
                 return {dx};
               });
  return y;
}

}  // namespace kiln::nn::functional
