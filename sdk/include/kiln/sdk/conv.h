// kiln/sdk/conv.h — the geometry of kiln.conv2d and its gradients (attributes, shape
// checks, the output size), written once for every plugin. The kernels keep their own
// algorithms and their own size limits (a BLAS's or cuDNN's int dimensions).
#ifndef KILN_SDK_CONV_H
#define KILN_SDK_CONV_H

#include <cstdint>

#include "kiln/sdk/op_args.h"
#include "kiln/sdk/op_attrs.h"

namespace kiln::sdk {

/// A checked 2-D convolution: x [n, c, h, w], w [o, c / groups, kh, kw],
/// y [n, o, ho, wo]. (A plain aggregate: device code may take it by value.)
struct ConvGeometry {
  int64_t n, c, h, w;  // input
  int64_t o, kh, kw;   // weight
  int64_t ho, wo;      // output
  int64_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups;
  int64_t cg, og;  // channels per group, in and out

  int64_t taps() const { return kh * kw; }
  int64_t k() const { return cg * kh * kw; }  // one output's reduction length
  int64_t plane_in() const { return h * w; }
  int64_t plane_out() const { return ho * wo; }
  bool is_pointwise() const {
    return kh == 1 && kw == 1 && stride_h == 1 && stride_w == 1 && pad_h == 0 && pad_w == 0;
  }
};

/// Reads stride, padding, dilation and groups and checks x/w/y (each call passes the
/// tensors it has: x or grad_x, w or grad_w, y or grad_y): 4-D, contiguous, channels
/// that fit the groups, and y of the size the attributes give.
inline ConvGeometry conv_geometry(const OpArgs& args, const TensorView& x, const TensorView& w,
                                  const TensorView& y) {
  const auto a = attrs::conv2d::read(args);  // the backward ops take the same attributes
  const int64_t *stride = a.stride, *padding = a.padding, *dilation = a.dilation;
  const int64_t groups = a.groups;
  KILN_SDK_CHECK_ARG(x.ndim == 4 && w.ndim == 4 && y.ndim == 4, "expected 4-D x, w and y, got ",
                     x.ndim, "-D, ", w.ndim, "-D, ", y.ndim, "-D");
  ConvGeometry g{x.shape[0], x.shape[1],  x.shape[2],  x.shape[3], w.shape[0], w.shape[2],
                 w.shape[3], y.shape[2],  y.shape[3],  stride[0],  stride[1],  padding[0],
                 padding[1], dilation[0], dilation[1], groups,     0,          0};
  KILN_SDK_CHECK_ARG(g.stride_h > 0 && g.stride_w > 0 && g.dil_h > 0 && g.dil_w > 0 &&
                         g.pad_h >= 0 && g.pad_w >= 0 && groups > 0,
                     "bad stride, padding, dilation or groups");
  KILN_SDK_CHECK_ARG(g.c % groups == 0 && g.o % groups == 0 && w.shape[1] * groups == g.c,
                     "channels (", g.c, " in, ", g.o, " out, weight ", shape_string(w),
                     ") do not fit groups = ", groups);
  g.cg = g.c / groups;
  g.og = g.o / groups;
  const int64_t ho = (g.h + 2 * g.pad_h - g.dil_h * (g.kh - 1) - 1) / g.stride_h + 1;
  const int64_t wo = (g.w + 2 * g.pad_w - g.dil_w * (g.kw - 1) - 1) / g.stride_w + 1;
  KILN_SDK_CHECK_ARG(y.shape[0] == g.n && y.shape[1] == g.o && g.ho == ho && g.wo == wo,
                     "y has shape ", shape_string(y), ", expected [", g.n, ",", g.o, ",", ho, ",",
                     wo, "]");
  expect_contiguous(x, "x");
  expect_contiguous(w, "w");
  expect_contiguous(y, "y");
  return g;
}

}  // namespace kiln::sdk

#endif  // KILN_SDK_CONV_H
