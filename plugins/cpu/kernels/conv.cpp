// kiln.conv2d and its two backward kernels: im2col / col2im around OpenBLAS GEMMs,
// one sample and group at a time (per-sample GEMMs are large enough for BLAS, and the
// column buffer stays small). A 1x1, stride-1, unpadded convolution skips im2col and
// multiplies the input directly.
//
// Layouts (contiguous): x [N, C, H, W], w [O, C/groups, kH, kW], y [N, O, Ho, Wo].
// col [K = Cg·kH·kW, Ho·Wo] with row (c·kH + kh)·kW + kw.
#include <algorithm>
#include <vector>

#include "blas.h"
#include "elementwise.h"
#include "registry.h"

namespace kiln::cpu {

namespace {

struct ConvGeometry {
  int64_t n, c, h, w;  // input
  int64_t o, kh, kw;   // weight
  int64_t ho, wo;      // output
  int64_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups;
  int64_t cg, og;  // channels per group
  int64_t k() const { return cg * kh * kw; }
  int64_t plane_in() const { return h * w; }
  int64_t plane_out() const { return ho * wo; }
  bool is_pointwise() const {
    return kh == 1 && kw == 1 && stride_h == 1 && stride_w == 1 && pad_h == 0 && pad_w == 0;
  }
};

// Reads the attributes and checks x/w/y shapes (any of which the caller passes as
// the tensor it has: x or grad_x, y or grad_y, w or grad_w).
ConvGeometry geometry(const OpArgs& args, const Tensor& x, const Tensor& w, const Tensor& y) {
  const int64_t* stride = args.attr_ints("stride", 2);
  const int64_t* padding = args.attr_ints("padding", 2);
  const int64_t* dilation = args.attr_ints("dilation", 2);
  const int64_t groups = args.attr_int("groups");
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
  check_blas_dims({g.og, g.plane_out(), g.k(), g.plane_in()});
  return g;
}

// col = im2col(x_plane_group) for one sample and group; parallel over col rows.
template <class T>
void im2col(const ConvGeometry& g, const T* x, T* col) {
  const int64_t rows = g.k(), plane = g.plane_out();
  pool().parallel_for(0, rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, plane)),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t row = begin; row < end; ++row) {
                          const int64_t c = row / (g.kh * g.kw), kh = row / g.kw % g.kh,
                                        kw = row % g.kw;
                          const T* src = x + c * g.plane_in();
                          T* dst = col + row * plane;
                          for (int64_t oh = 0; oh < g.ho; ++oh) {
                            const int64_t ih = oh * g.stride_h - g.pad_h + kh * g.dil_h;
                            T* out = dst + oh * g.wo;
                            if (ih < 0 || ih >= g.h) {
                              std::fill(out, out + g.wo, T(0));
                              continue;
                            }
                            const T* in = src + ih * g.w;
                            for (int64_t ow = 0; ow < g.wo; ++ow) {
                              const int64_t iw = ow * g.stride_w - g.pad_w + kw * g.dil_w;
                              out[ow] = (iw >= 0 && iw < g.w) ? in[iw] : T(0);
                            }
                          }
                        }
                      });
}

// x_plane_group += col2im(col), parallel over input channels: each channel's plane
// is written by one thread, in a fixed order, so the sums are deterministic.
template <class T>
void col2im_add(const ConvGeometry& g, const T* col, T* x) {
  const int64_t plane = g.plane_out(), taps = g.kh * g.kw;
  pool().parallel_for(0, g.cg,
                      std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, taps * plane)),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t c = begin; c < end; ++c) {
                          T* dst = x + c * g.plane_in();
                          for (int64_t tap = 0; tap < taps; ++tap) {
                            const int64_t kh = tap / g.kw, kw = tap % g.kw;
                            const T* src = col + (c * taps + tap) * plane;
                            for (int64_t oh = 0; oh < g.ho; ++oh) {
                              const int64_t ih = oh * g.stride_h - g.pad_h + kh * g.dil_h;
                              if (ih < 0 || ih >= g.h) continue;
                              for (int64_t ow = 0; ow < g.wo; ++ow) {
                                const int64_t iw = ow * g.stride_w - g.pad_w + kw * g.dil_w;
                                if (iw >= 0 && iw < g.w) dst[ih * g.w + iw] += src[oh * g.wo + ow];
                              }
                            }
                          }
                        }
                      });
}

template <class T>
void conv2d_typed(const ConvGeometry& g, const T* x, const T* w, const T* bias, T* y) {
  std::vector<T> col(g.is_pointwise() ? 0 : static_cast<size_t>(g.k() * g.plane_out()));
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const T* x_ng = x + (n * g.c + grp * g.cg) * g.plane_in();
      T* y_ng = y + (n * g.o + grp * g.og) * g.plane_out();
      const T* cols = x_ng;
      if (!g.is_pointwise()) {
        im2col(g, x_ng, col.data());
        cols = col.data();
      }
      gemm(false, false, g.og, g.plane_out(), g.k(), T(1), w + grp * g.og * g.k(), g.k(), cols,
           g.plane_out(), T(0), y_ng, g.plane_out());
      for (int64_t oc = 0; oc < g.og; ++oc) {
        const T b = bias[grp * g.og + oc];
        T* row = y_ng + oc * g.plane_out();
        for (int64_t i = 0; i < g.plane_out(); ++i) row[i] += b;
      }
    }
  }
}

template <class T>
void conv2d_backward_input_typed(const ConvGeometry& g, const T* grad_y, const T* w, T* grad_x) {
  if (g.is_pointwise()) {
    for (int64_t n = 0; n < g.n; ++n) {
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        gemm(true, false, g.cg, g.plane_out(), g.og, T(1), w + grp * g.og * g.k(), g.k(),
             grad_y + (n * g.o + grp * g.og) * g.plane_out(), g.plane_out(), T(0),
             grad_x + (n * g.c + grp * g.cg) * g.plane_in(), g.plane_in());
      }
    }
    return;
  }
  std::fill(grad_x, grad_x + g.n * g.c * g.plane_in(), T(0));
  std::vector<T> col(static_cast<size_t>(g.k() * g.plane_out()));
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      gemm(true, false, g.k(), g.plane_out(), g.og, T(1), w + grp * g.og * g.k(), g.k(),
           grad_y + (n * g.o + grp * g.og) * g.plane_out(), g.plane_out(), T(0), col.data(),
           g.plane_out());
      col2im_add(g, col.data(), grad_x + (n * g.c + grp * g.cg) * g.plane_in());
    }
  }
}

template <class T>
void conv2d_backward_weight_typed(const ConvGeometry& g, const T* grad_y, const T* x, T* grad_w) {
  std::vector<T> col(g.is_pointwise() ? 0 : static_cast<size_t>(g.k() * g.plane_out()));
  if (g.n == 0) std::fill(grad_w, grad_w + g.o * g.k(), T(0));
  // Samples in order, accumulating with beta = 1: deterministic.
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const T* x_ng = x + (n * g.c + grp * g.cg) * g.plane_in();
      const T* cols = x_ng;
      if (!g.is_pointwise()) {
        im2col(g, x_ng, col.data());
        cols = col.data();
      }
      gemm(false, true, g.og, g.k(), g.plane_out(), T(1),
           grad_y + (n * g.o + grp * g.og) * g.plane_out(), g.plane_out(), cols, g.plane_out(),
           n == 0 ? T(0) : T(1), grad_w + grp * g.og * g.k(), g.k());
    }
  }
}

using ConvTypes = TypeList<float, double>;

void conv2d_impl(const OpArgs& args) {
  args.expect_counts(3, 1);
  const Tensor x = args.input(0), w = args.input(1), bias = args.input(2), y = args.output(0);
  const ConvGeometry g = geometry(args, x, w, y);
  expect_shape(bias, {g.o}, "bias");
  for (const Tensor* t : {&w, &bias, &y}) expect_dtype(*t, x.dtype, "operand");
  if (y.numel() == 0) return;
  if (!dispatch<ConvTypes>(x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        conv2d_typed<T>(g, x.ptr<const T>(), w.ptr<const T>(), bias.ptr<const T>(), y.ptr<T>());
      })) {
    unsupported_dtype(x.dtype);
  }
}

void conv2d_backward_input_impl(const OpArgs& args) {
  args.expect_counts(2, 1);
  const Tensor grad_y = args.input(0), w = args.input(1), grad_x = args.output(0);
  const ConvGeometry g = geometry(args, grad_x, w, grad_y);
  for (const Tensor* t : {&w, &grad_x}) expect_dtype(*t, grad_y.dtype, "operand");
  if (grad_x.numel() == 0) return;
  if (!dispatch<ConvTypes>(grad_y.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        conv2d_backward_input_typed<T>(g, grad_y.ptr<const T>(), w.ptr<const T>(), grad_x.ptr<T>());
      })) {
    unsupported_dtype(grad_y.dtype);
  }
}

void conv2d_backward_weight_impl(const OpArgs& args) {
  args.expect_counts(2, 1);
  const Tensor grad_y = args.input(0), x = args.input(1), grad_w = args.output(0);
  const ConvGeometry g = geometry(args, x, grad_w, grad_y);
  for (const Tensor* t : {&x, &grad_w}) expect_dtype(*t, grad_y.dtype, "operand");
  if (grad_w.numel() == 0) return;
  if (!dispatch<ConvTypes>(grad_y.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        conv2d_backward_weight_typed<T>(g, grad_y.ptr<const T>(), x.ptr<const T>(),
                                        grad_w.ptr<T>());
      })) {
    unsupported_dtype(grad_y.dtype);
  }
}

int32_t supports_conv(void*, const kiln_op_args* args) {
  const kiln_dtype d = input_dtype(args, 0);
  return (d == KILN_DTYPE_FLOAT32 || d == KILN_DTYPE_FLOAT64) && output_dtype(args, 0) == d;
}

}  // namespace

void add_conv_kernels(KernelList& list) {
  list.push_back({"kiln.conv2d", &run_kernel<conv2d_impl>, &supports_conv, 0});
  list.push_back(
      {"kiln.conv2d_backward_input", &run_kernel<conv2d_backward_input_impl>, &supports_conv, 0});
  list.push_back(
      {"kiln.conv2d_backward_weight", &run_kernel<conv2d_backward_weight_impl>, &supports_conv, 0});
}

}  // namespace kiln::cpu
