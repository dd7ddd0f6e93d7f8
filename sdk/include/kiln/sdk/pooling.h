// kiln/sdk/pooling.h — the operand and attribute checks of the catalogue's 2-D
// pooling ops (kiln.max_pool2d, kiln.avg_pool2d and their gradients), written once for
// every plugin. The kernels keep their own loops; what they compute over is checked
// here the same way everywhere, with the same messages.
#ifndef KILN_SDK_POOLING_H
#define KILN_SDK_POOLING_H

#include <cstdint>

#include "kiln/sdk/op_args.h"
#include "kiln/sdk/op_attrs.h"

namespace kiln::sdk {

/// One axis of a pooling window (a plain aggregate: device code may take it by value).
struct PoolWindow {
  int64_t kernel, stride, pad, dilation;
};

/// The geometry of a pooling call: N·C planes of h × w in, ho × wo out.
struct PoolShape {
  int64_t planes, h, w, ho, wo;
};

/// Checks x/y (or grad_x/grad_y: 4-D [N, C, H, W], same N and C, contiguous) and
/// returns the plane geometry.
inline PoolShape pool_shape(const TensorView& x, const TensorView& y) {
  KILN_SDK_CHECK_ARG(x.ndim == 4 && y.ndim == 4, "expected 4-D [N, C, H, W] operands, got ",
                     shape_string(x), " and ", shape_string(y));
  KILN_SDK_CHECK_ARG(x.shape[0] == y.shape[0] && x.shape[1] == y.shape[1], "batch/channel dims of ",
                     shape_string(x), " and ", shape_string(y), " differ");
  expect_contiguous(x, "x");
  expect_contiguous(y, "y");
  return {x.shape[0] * x.shape[1], x.shape[2], x.shape[3], y.shape[2], y.shape[3]};
}

/// The height and width windows of a pooling call's attributes, checked: sizes, strides
/// and dilations positive, padding non-negative. Average pooling has no dilation (1).
inline void pool_windows(const int64_t* kernel_size, const int64_t* stride, const int64_t* padding,
                         const int64_t* dilation, PoolWindow& wh, PoolWindow& ww) {
  wh = {kernel_size[0], stride[0], padding[0], dilation ? dilation[0] : 1};
  ww = {kernel_size[1], stride[1], padding[1], dilation ? dilation[1] : 1};
  KILN_SDK_CHECK_ARG(wh.kernel > 0 && ww.kernel > 0 && wh.stride > 0 && ww.stride > 0 &&
                         wh.dilation > 0 && ww.dilation > 0 && wh.pad >= 0 && ww.pad >= 0,
                     "kernel_size, stride and dilation must be positive, padding non-negative");
}
inline void pool_windows(const attrs::max_pool2d& a, PoolWindow& wh, PoolWindow& ww) {
  pool_windows(a.kernel_size, a.stride, a.padding, a.dilation, wh, ww);
}
inline void pool_windows(const attrs::avg_pool2d& a, PoolWindow& wh, PoolWindow& ww) {
  pool_windows(a.kernel_size, a.stride, a.padding, nullptr, wh, ww);
}

/// Reads the attributes of a max pooling call (`with_dilation`) or an average pooling
/// call and returns its windows as pool_windows does (kept for plugins written
/// against SDK 1.0; new code reads attrs::max_pool2d / attrs::avg_pool2d itself).
inline void pool_window_attrs(const OpArgs& args, bool with_dilation, PoolWindow& wh,
                              PoolWindow& ww) {
  if (with_dilation)
    pool_windows(attrs::max_pool2d::read(args), wh, ww);
  else
    pool_windows(attrs::avg_pool2d::read(args), wh, ww);
}

}  // namespace kiln::sdk

#endif  // KILN_SDK_POOLING_H
