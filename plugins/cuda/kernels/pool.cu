// 2-D pooling and its gradients: max_pool2d, avg_pool2d, adaptive_avg_pool2d.
//
// All operands are contiguous [N, C, H, W]; every kernel is one thread per element of
// what it writes, in grid-stride loops. The forward kernels mirror the CPU plugin's
// loops exactly (same window arithmetic, same summation order, same accumulation
// type), so results match it bit for bit.
//
// The backward kernels gather instead of scatter: one thread per input element
// visits the outputs whose windows can contain it, in increasing output order, and
// adds their shares. Each gradient element is thus written by exactly one thread, with
// no atomics, in the order the CPU plugin's serial loop uses: deterministic, and equal
// to the CPU's result bit for bit.
//
// max_pool2d_backward relies on `indices` being what max_pool2d produced with the same
// attributes (an index inside its own window, or -1 for a window of padding only).
// The same kernel checks that for every index and reports any other value through
// the error flag, rather than silently dropping its gradient.
#include <cmath>

#include "dnn_util.cuh"
#include "kernels/registry.h"
#include "kiln/sdk/pooling.h"
#include "staged.h"

namespace kiln::cuda {

namespace {

using namespace dnn;

// The operand and attribute checks every plugin shares (kiln/sdk/pooling.h).
using Window = sdk::PoolWindow;
using sdk::pool_shape;
using sdk::PoolShape;

template <class F>
void visit_pool(kiln_dtype dtype, F&& fn) {
  if (!visit_float(dtype, fn)) sdk::unsupported_dtype(dtype);
}

// Index arithmetic runs in I: uint32_t when every index, size and window position of
// the call fits in 31 bits (a 32-bit division is several times cheaper than a 64-bit
// one, and these kernels divide a few times per element), else uint64_t.

// a / b and a % b for a >= 0, b > 0.
template <class I>
__device__ __forceinline__ int64_t udiv(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<I>(a) / static_cast<I>(b));
}
template <class I>
__device__ __forceinline__ int64_t umod(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<I>(a) % static_cast<I>(b));
}

// ceil(a / b) for b > 0 and any sign of a.
template <class I>
__device__ __forceinline__ int64_t div_ceil(int64_t a, int64_t b) {
  return a >= 0 ? udiv<I>(a + b - 1, b) : -udiv<I>(-a, b);
}

// floor(a / b) for b > 0 and any sign of a.
template <class I>
__device__ __forceinline__ int64_t div_floor(int64_t a, int64_t b) {
  return a >= 0 ? udiv<I>(a, b) : -udiv<I>(-a + b - 1, b);
}

// (plane, row, column) of element i of planes of rows × cols.
template <class I>
__device__ __forceinline__ void split_index(int64_t i, int64_t rows, int64_t cols, int64_t& plane,
                                            int64_t& row, int64_t& col) {
  const int64_t r = udiv<I>(i, cols);
  col = i - r * cols;
  plane = udiv<I>(r, rows);
  row = r - plane * rows;
}

// True when 32-bit index arithmetic is exact for this call: element counts and every
// window coordinate (at most size + padding + dilated kernel extent) below 2^31.
bool fits_32(const PoolShape& s, const Window& wh, const Window& ww) {
  const int64_t limit = int64_t{1} << 31;
  const int64_t extent_h = s.h + 2 * wh.pad + wh.dilation * wh.kernel + wh.stride * s.ho;
  const int64_t extent_w = s.w + 2 * ww.pad + ww.dilation * ww.kernel + ww.stride * s.wo;
  return s.planes * s.h * s.w < limit && s.planes * s.ho * s.wo < limit && extent_h < limit &&
         extent_w < limit;
}

// Calls fn(Tag<I>{}) with the index type for this call.
template <class Fn>
void with_index_type(bool small, Fn&& fn) {
  if (small) {
    fn(Tag<uint32_t>{});
  } else {
    fn(Tag<uint64_t>{});
  }
}

// ---- max pooling -------------------------------------------------------------------------

template <class T, class I>
__global__ void max_pool_kernel(const T* __restrict__ x, T* __restrict__ y,
                                int64_t* __restrict__ indices, PoolShape s, Window wh, Window ww,
                                bool last_nan) {
  using C = compute_t<T>;
  const int64_t total = s.planes * s.ho * s.wo;
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    int64_t plane, oh, ow;
    split_index<I>(i, s.ho, s.wo, plane, oh, ow);
    const T* in = x + plane * s.h * s.w;
    // Padding is -inf: only real elements compete. The first maximum wins ties; a NaN
    // wins over everything: the first one in the verified kernel, the last one (as
    // PyTorch) under the staged rule (staged.h, max_pool.last_nan).
    C best = -static_cast<C>(INFINITY);
    int64_t best_index = -1;
    for (int64_t kh = 0; kh < wh.kernel; ++kh) {
      const int64_t ih = oh * wh.stride - wh.pad + kh * wh.dilation;
      if (ih < 0 || ih >= s.h) continue;
      for (int64_t kw = 0; kw < ww.kernel; ++kw) {
        const int64_t iw = ow * ww.stride - ww.pad + kw * ww.dilation;
        if (iw < 0 || iw >= s.w) continue;
        const C v = load(in[ih * s.w + iw]);
        const bool v_nan = v != v, best_nan = best != best;
        const bool better = last_nan ? best_index < 0 || v > best || v_nan
                            : v_nan  ? !best_nan || best_index < 0
                                     : best_index < 0 || v > best;
        if (better) {
          best = v;
          best_index = ih * s.w + iw;
        }
      }
    }
    y[i] = store<T>(best);
    indices[i] = best_index;
  }
}

void max_pool2d_impl(const OpArgs& args, const Launch& l) {
  args.expect_counts(1, 2);
  Window wh, ww;
  sdk::pool_windows(sdk::attrs::max_pool2d::read(args), wh, ww);
  const TensorView x = args.input(0), y = args.output(0), indices = args.output(1);
  const PoolShape s = pool_shape(x, y);
  sdk::expect_dtype(y, x.dtype, "y");
  sdk::expect_dtype(indices, KILN_DTYPE_INT64, "indices");
  KILN_SDK_CHECK_ARG(y.same_shape(indices), "indices must have y's shape");
  sdk::expect_contiguous(indices, "indices");
  const int64_t total = y.numel();
  if (total == 0) return;
  const bool last_nan = staged_on(kStagedMaxPoolLastNaN);  // a lookup in a short list
  visit_pool(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_index_type(fits_32(s, wh, ww), [&](auto index_tag) {
      using I = typename decltype(index_tag)::type;
      max_pool_kernel<T, I><<<grid_for(total, l), kThreads, 0, l.stream()>>>(
          x.ptr<const T>(), y.ptr<T>(), indices.ptr<int64_t>(), s, wh, ww, last_nan);
    });
  });
  check_launch("max_pool2d");
}

// One thread per grad_x element gathers from the outputs whose windows hold it; the
// same thread also checks the index of output element `i` (when there is one).
template <class T, class I>
__global__ void max_pool_backward_kernel(const T* __restrict__ grad_y,
                                         const int64_t* __restrict__ indices,
                                         T* __restrict__ grad_x, PoolShape s, Window wh, Window ww,
                                         ErrorSink errors) {
  using C = compute_t<T>;
  const int64_t total_in = s.planes * s.h * s.w, total_out = s.planes * s.ho * s.wo;
  const int64_t total = total_in > total_out ? total_in : total_out;
  const int64_t plane_out = s.ho * s.wo;
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    if (i < total_out) {
      int64_t plane, oh, ow;
      split_index<I>(i, s.ho, s.wo, plane, oh, ow);
      const int64_t v = indices[i];
      bool valid = v == -1;
      if (v >= 0 && v < s.h * s.w) {
        const int64_t vh = udiv<I>(v, s.w);
        const int64_t th = vh - (oh * wh.stride - wh.pad);
        const int64_t tw = (v - vh * s.w) - (ow * ww.stride - ww.pad);
        valid = th >= 0 && tw >= 0 && umod<I>(th, wh.dilation) == 0 &&
                umod<I>(tw, ww.dilation) == 0 && udiv<I>(th, wh.dilation) < wh.kernel &&
                udiv<I>(tw, ww.dilation) < ww.kernel;
      }
      if (!valid) errors.raise(kDeviceErrorPoolIndexOutsideWindow, v, oh * s.wo + ow, s.h * s.w);
    }
    if (i < total_in) {
      int64_t plane, ih, iw;
      split_index<I>(i, s.h, s.w, plane, ih, iw);
      const int64_t target = ih * s.w + iw;
      const int64_t* idx = indices + plane * plane_out;
      const T* g = grad_y + plane * plane_out;
      C acc = 0;
      // kh descending visits oh ascending (and kw descending, ow ascending): the
      // CPU plugin's order of summation.
      for (int64_t kh = wh.kernel - 1; kh >= 0; --kh) {
        const int64_t th = ih + wh.pad - kh * wh.dilation;
        if (th < 0) continue;
        const int64_t oh = udiv<I>(th, wh.stride);
        if (oh * wh.stride != th || oh >= s.ho) continue;
        for (int64_t kw = ww.kernel - 1; kw >= 0; --kw) {
          const int64_t tw = iw + ww.pad - kw * ww.dilation;
          if (tw < 0) continue;
          const int64_t ow = udiv<I>(tw, ww.stride);
          if (ow * ww.stride != tw) continue;
          if (ow >= s.wo) continue;
          const int64_t o = oh * s.wo + ow;
          if (idx[o] == target) acc += load(g[o]);
        }
      }
      grad_x[i] = store<T>(acc);
    }
  }
}

void max_pool2d_backward_impl(const OpArgs& args, const Launch& l) {
  args.expect_counts(2, 1);
  Window wh, ww;
  sdk::pool_windows(sdk::attrs::max_pool2d_backward::read(args), wh, ww);
  const TensorView grad_y = args.input(0), indices = args.input(1), grad_x = args.output(0);
  const PoolShape s = pool_shape(grad_x, grad_y);
  sdk::expect_dtype(grad_x, grad_y.dtype, "grad_x");
  sdk::expect_dtype(indices, KILN_DTYPE_INT64, "indices");
  KILN_SDK_CHECK_ARG(grad_y.same_shape(indices), "indices must have grad_y's shape");
  sdk::expect_contiguous(indices, "indices");
  const int64_t total = std::max(grad_x.numel(), grad_y.numel());
  if (grad_x.numel() == 0) return;
  visit_pool(grad_y.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_index_type(fits_32(s, wh, ww), [&](auto index_tag) {
      using I = typename decltype(index_tag)::type;
      max_pool_backward_kernel<T, I><<<grid_for(total, l), kThreads, 0, l.stream()>>>(
          grad_y.ptr<const T>(), indices.ptr<const int64_t>(), grad_x.ptr<T>(), s, wh, ww,
          error_sink(l));
    });
  });
  check_launch("max_pool2d_backward");
}

// ---- average pooling ---------------------------------------------------------------------

// One output's window, clipped to the input, and PyTorch's divisor for it (the CPU
// plugin's avg_window, step for step).
struct AvgWindow {
  int64_t h0, h1, w0, w1;
  int64_t divisor;
};

__device__ __forceinline__ AvgWindow avg_window(int64_t oh, int64_t ow, const Window& wh,
                                                const Window& ww, const PoolShape& s,
                                                bool count_include_pad) {
  int64_t h0 = oh * wh.stride - wh.pad, w0 = ow * ww.stride - ww.pad;
  int64_t h1 = min(h0 + wh.kernel, s.h + wh.pad), w1 = min(w0 + ww.kernel, s.w + ww.pad);
  const int64_t padded_size = (h1 - h0) * (w1 - w0);
  h0 = max(h0, int64_t{0});
  w0 = max(w0, int64_t{0});
  h1 = min(h1, s.h);
  w1 = min(w1, s.w);
  const int64_t divisor = count_include_pad ? padded_size : (h1 - h0) * (w1 - w0);
  return {h0, h1, w0, w1, divisor};
}

template <class T, class I>
__global__ void avg_pool_kernel(const T* __restrict__ x, T* __restrict__ y, PoolShape s, Window wh,
                                Window ww, bool count_include_pad) {
  using C = compute_t<T>;
  const int64_t total = s.planes * s.ho * s.wo;
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    int64_t plane, oh, ow;
    split_index<I>(i, s.ho, s.wo, plane, oh, ow);
    const T* in = x + plane * s.h * s.w;
    const AvgWindow win = avg_window(oh, ow, wh, ww, s, count_include_pad);
    C sum = 0;
    for (int64_t ih = win.h0; ih < win.h1; ++ih) {
      for (int64_t iw = win.w0; iw < win.w1; ++iw) sum += load(in[ih * s.w + iw]);
    }
    y[i] = store<T>(win.divisor > 0 ? sum / static_cast<C>(win.divisor) : C(0));
  }
}

template <class T, class I>
__global__ void avg_pool_backward_kernel(const T* __restrict__ grad_y, T* __restrict__ grad_x,
                                         PoolShape s, Window wh, Window ww,
                                         bool count_include_pad) {
  using C = compute_t<T>;
  const int64_t total = s.planes * s.h * s.w;
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    int64_t plane, ih, iw;
    split_index<I>(i, s.h, s.w, plane, ih, iw);
    const T* g = grad_y + plane * s.ho * s.wo;
    // Window oh starts at oh·stride − pad and spans `kernel` rows, so it holds ih for
    // (ih + pad − kernel + 1)/stride <= oh <= (ih + pad)/stride.
    const int64_t oh0 = max(int64_t{0}, div_ceil<I>(ih + wh.pad - wh.kernel + 1, wh.stride));
    const int64_t oh1 = min(s.ho - 1, div_floor<I>(ih + wh.pad, wh.stride));
    const int64_t ow0 = max(int64_t{0}, div_ceil<I>(iw + ww.pad - ww.kernel + 1, ww.stride));
    const int64_t ow1 = min(s.wo - 1, div_floor<I>(iw + ww.pad, ww.stride));
    C acc = 0;
    for (int64_t oh = oh0; oh <= oh1; ++oh) {
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        const AvgWindow win = avg_window(oh, ow, wh, ww, s, count_include_pad);
        if (win.divisor <= 0 || ih < win.h0 || ih >= win.h1 || iw < win.w0 || iw >= win.w1)
          continue;
        acc += load(g[oh * s.wo + ow]) / static_cast<C>(win.divisor);
      }
    }
    grad_x[i] = store<T>(acc);
  }
}

void avg_pool2d_impl(const OpArgs& args, const Launch& l) {
  args.expect_counts(1, 1);
  Window wh, ww;
  const auto a = sdk::attrs::avg_pool2d::read(args);  // ceil_mode: y's shape reflects it
  sdk::pool_windows(a, wh, ww);
  const bool count_include_pad = a.count_include_pad != 0;
  const TensorView x = args.input(0), y = args.output(0);
  const PoolShape s = pool_shape(x, y);
  sdk::expect_dtype(y, x.dtype, "y");
  const int64_t total = y.numel();
  if (total == 0) return;
  visit_pool(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_index_type(fits_32(s, wh, ww), [&](auto index_tag) {
      using I = typename decltype(index_tag)::type;
      avg_pool_kernel<T, I><<<grid_for(total, l), kThreads, 0, l.stream()>>>(
          x.ptr<const T>(), y.ptr<T>(), s, wh, ww, count_include_pad);
    });
  });
  check_launch("avg_pool2d");
}

void avg_pool2d_backward_impl(const OpArgs& args, const Launch& l) {
  args.expect_counts(1, 1);
  Window wh, ww;
  const auto a = sdk::attrs::avg_pool2d_backward::read(args);  // ceil_mode: y's shape reflects it
  sdk::pool_windows(a, wh, ww);
  const bool count_include_pad = a.count_include_pad != 0;
  const TensorView grad_y = args.input(0), grad_x = args.output(0);
  const PoolShape s = pool_shape(grad_x, grad_y);
  sdk::expect_dtype(grad_x, grad_y.dtype, "grad_x");
  const int64_t total = grad_x.numel();
  if (total == 0) return;
  visit_pool(grad_y.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_index_type(fits_32(s, wh, ww), [&](auto index_tag) {
      using I = typename decltype(index_tag)::type;
      avg_pool_backward_kernel<T, I><<<grid_for(total, l), kThreads, 0, l.stream()>>>(
          grad_y.ptr<const T>(), grad_x.ptr<T>(), s, wh, ww, count_include_pad);
    });
  });
  check_launch("avg_pool2d_backward");
}

// ---- adaptive average pooling ------------------------------------------------------------

// Window i of `out` over `in`: [floor(i·in/out), ceil((i+1)·in/out)).
__device__ __forceinline__ int64_t adaptive_begin(int64_t i, int64_t in, int64_t out) {
  return i * in / out;
}
__device__ __forceinline__ int64_t adaptive_end(int64_t i, int64_t in, int64_t out) {
  return ((i + 1) * in + out - 1) / out;
}

template <class T>
__global__ void adaptive_avg_pool_kernel(const T* __restrict__ x, T* __restrict__ y, PoolShape s) {
  using C = compute_t<T>;
  const int64_t total = s.planes * s.ho * s.wo;
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t ow = i % s.wo, oh = i / s.wo % s.ho, plane = i / (s.wo * s.ho);
    const T* in = x + plane * s.h * s.w;
    const int64_t h0 = adaptive_begin(oh, s.h, s.ho), h1 = adaptive_end(oh, s.h, s.ho);
    const int64_t w0 = adaptive_begin(ow, s.w, s.wo), w1 = adaptive_end(ow, s.w, s.wo);
    C sum = 0;
    for (int64_t ih = h0; ih < h1; ++ih) {
      for (int64_t iw = w0; iw < w1; ++iw) sum += load(in[ih * s.w + iw]);
    }
    const int64_t count = (h1 - h0) * (w1 - w0);
    y[i] = store<T>(count > 0 ? sum / static_cast<C>(count) : C(0));
  }
}

template <class T>
__global__ void adaptive_avg_pool_backward_kernel(const T* __restrict__ grad_y,
                                                  T* __restrict__ grad_x, PoolShape s) {
  using C = compute_t<T>;
  const int64_t total = s.planes * s.h * s.w;
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const int64_t iw = i % s.w, ih = i / s.w % s.h, plane = i / (s.w * s.h);
    const T* g = grad_y + plane * s.ho * s.wo;
    // Windows holding ih: floor(ih·Ho/H) <= oh <= ceil((ih+1)·Ho/H) − 1 (H > 0 here).
    const int64_t oh0 = ih * s.ho / s.h;
    const int64_t oh1 = min(s.ho - 1, ((ih + 1) * s.ho + s.h - 1) / s.h - 1);
    const int64_t ow0 = iw * s.wo / s.w;
    const int64_t ow1 = min(s.wo - 1, ((iw + 1) * s.wo + s.w - 1) / s.w - 1);
    C acc = 0;
    for (int64_t oh = oh0; oh <= oh1; ++oh) {
      const int64_t h0 = adaptive_begin(oh, s.h, s.ho), h1 = adaptive_end(oh, s.h, s.ho);
      if (ih < h0 || ih >= h1) continue;
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        const int64_t w0 = adaptive_begin(ow, s.w, s.wo), w1 = adaptive_end(ow, s.w, s.wo);
        if (iw < w0 || iw >= w1) continue;
        const int64_t count = (h1 - h0) * (w1 - w0);
        acc += load(g[oh * s.wo + ow]) / static_cast<C>(count);
      }
    }
    grad_x[i] = store<T>(acc);
  }
}

void adaptive_avg_pool2d_impl(const OpArgs& args, const Launch& l) {
  args.expect_counts(1, 1);
  const TensorView x = args.input(0), y = args.output(0);
  const PoolShape s = pool_shape(x, y);
  sdk::expect_dtype(y, x.dtype, "y");
  const int64_t total = y.numel();
  if (total == 0) return;
  visit_pool(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    adaptive_avg_pool_kernel<T>
        <<<grid_for(total, l), kThreads, 0, l.stream()>>>(x.ptr<const T>(), y.ptr<T>(), s);
  });
  check_launch("adaptive_avg_pool2d");
}

void adaptive_avg_pool2d_backward_impl(const OpArgs& args, const Launch& l) {
  args.expect_counts(1, 1);
  const TensorView grad_y = args.input(0), grad_x = args.output(0);
  const PoolShape s = pool_shape(grad_x, grad_y);
  sdk::expect_dtype(grad_x, grad_y.dtype, "grad_x");
  const int64_t total = grad_x.numel();
  if (total == 0) return;
  if (grad_y.numel() == 0) {  // no windows: no gradient
    check(cudaMemsetAsync(grad_x.data, 0, static_cast<size_t>(total) * grad_x.itemsize, l.stream()),
          "adaptive_avg_pool2d_backward: cudaMemsetAsync");
    return;
  }
  visit_pool(grad_y.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    adaptive_avg_pool_backward_kernel<T><<<grid_for(total, l), kThreads, 0, l.stream()>>>(
        grad_y.ptr<const T>(), grad_x.ptr<T>(), s);
  });
  check_launch("adaptive_avg_pool2d_backward");
}

}  // namespace

void add_pool_kernels(KernelList& list) {
  list.push_back(catalogue_entry<op::max_pool2d>(&max_pool2d_impl, &supports_float_input0, 0));
  list.push_back(catalogue_entry<op::max_pool2d_backward>(&max_pool2d_backward_impl,
                                                          &supports_float_input0, 0));
  list.push_back(catalogue_entry<op::avg_pool2d>(&avg_pool2d_impl, &supports_float_input0, 0));
  list.push_back(catalogue_entry<op::avg_pool2d_backward>(&avg_pool2d_backward_impl,
                                                          &supports_float_input0, 0));
  list.push_back(catalogue_entry<op::adaptive_avg_pool2d>(&adaptive_avg_pool2d_impl,
                                                          &supports_float_input0, 0));
  list.push_back(catalogue_entry<op::adaptive_avg_pool2d_backward>(
      &adaptive_avg_pool2d_backward_impl, &supports_float_input0, 0));
}

}  // namespace kiln::cuda
