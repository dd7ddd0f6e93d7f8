// kiln.conv2d and its two backward kernels: im2col / col2im around OpenBLAS GEMMs.
//
// Layouts (contiguous): x [N, C, H, W], w [O, C/groups, kH, kW], y [N, O, Ho, Wo].
// col [K = Cg·kH·kW, width] holds, for a range of output positions p = oh·Wo + ow,
// row (c·kH + kh)·kW + kw: the input under tap (kh, kw) of channel c, 0 in the
// padding. A 1x1, stride-1, unpadded convolution skips im2col and multiplies the
// input directly; float32 3x3 stride-1 convolutions with enough channels go to
// Winograd instead (conv_winograd.h).
//
// Parallel work: one pool task per sample (per sample and block of positions or
// channels when the batch is smaller than the pool), each with its own column buffer
// (per-thread scratch) and serial GEMMs (blas.h). Column buffers hold at most
// kColumnBudget elements, splitting the output positions into blocks, so they stay
// in cache.
//
// Determinism: every element of y and grad_x is computed by one task. The weight
// gradient, the only sum over samples, is built as partial sums over fixed sample
// ranges, chosen from the shapes alone and added in order.
#include <algorithm>

#include "blas.h"
#include "conv_winograd.h"
#include "elementwise.h"
#include "kiln/sdk/conv.h"
#include "registry.h"
#include "scratch.h"
#include "widen.h"

namespace kiln::cpu {

namespace {

// Column buffer elements per task (1 MiB of float32: L2-resident on current cores).
constexpr int64_t kColumnBudget = int64_t{1} << 18;
// Narrowest block of output positions worth a GEMM of its own.
constexpr int64_t kMinColumns = 32;
// Partial weight gradients: at most this many, and at most kPartialBudget elements
// in all unless that would leave pool threads idle.
constexpr int64_t kMaxPartials = 16;
constexpr int64_t kPartialBudget = int64_t{1} << 22;

using sdk::ConvGeometry;

// The shared checks (kiln/sdk/conv.h) and OpenBLAS's int dimensions.
ConvGeometry geometry(const OpArgs& args, const TensorView& x, const TensorView& w,
                      const TensorView& y) {
  const ConvGeometry g = sdk::conv_geometry(args, x, w, y);
  check_blas_dims({g.og, g.plane_out(), g.k(), g.plane_in()});
  return g;
}

int64_t ceil_div(int64_t a, int64_t b) {  // b > 0; rounds toward +infinity
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

// Width of the blocks of output positions for tasks whose column buffer has `rows`
// rows; at least `min_blocks` blocks when the plane allows.
int64_t column_block(int64_t plane, int64_t rows, int64_t min_blocks) {
  int64_t blocks = ceil_div(plane * std::max<int64_t>(rows, 1), kColumnBudget);
  blocks = std::max(blocks, min_blocks);
  blocks = std::max<int64_t>(1, std::min(blocks, plane / kMinColumns));
  return ceil_div(plane, blocks);
}

// Pool tasks 0..count-1, in contiguous ranges, one range per thread.
template <class Fn>
void run_tasks(int64_t count, const Fn& fn) {
  pool().parallel_for(0, count, 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) fn(task);
  });
}

// The output range of one tap along one axis: outputs i whose input index
// i·stride + off lies in [0, size), as [lo, hi) within [0, out).
struct TapRange {
  int64_t lo, hi;
};
TapRange tap_range(int64_t off, int64_t stride, int64_t size, int64_t out) {
  const int64_t lo = std::clamp<int64_t>(ceil_div(-off, stride), 0, out);
  return {lo, std::clamp<int64_t>(ceil_div(size - off, stride), lo, out)};
}

// Calls fn(plane, rows, cols, off_h, off_w, out) for every row of the column matrix
// of channels [c0, c1), in order: `out` is that row (width elements), `plane` the
// channel's input plane, and rows/cols the outputs whose tap lands inside the input,
// at input row oh·stride_h + off_h and column ow·stride_w + off_w.
template <class In, class Col, class Fn>
void for_each_tap(const ConvGeometry& g, In* x, int64_t c0, int64_t c1, int64_t width, Col* col,
                  const Fn& fn) {
  for (int64_t c = c0; c < c1; ++c) {
    In* plane = x + c * g.plane_in();
    for (int64_t kh = 0; kh < g.kh; ++kh) {
      const int64_t off_h = kh * g.dil_h - g.pad_h;
      const TapRange rows = tap_range(off_h, g.stride_h, g.h, g.ho);
      for (int64_t kw = 0; kw < g.kw; ++kw, col += width) {
        const int64_t off_w = kw * g.dil_w - g.pad_w;
        fn(plane, rows, tap_range(off_w, g.stride_w, g.w, g.wo), off_h, off_w, col);
      }
    }
  }
}

// Calls piece(oh, ow0, ow1, out) for the pieces of output rows that positions
// [p0, p1) cover, out[i] being position (oh, ow0 + i). No division per piece.
template <class Col, class Piece>
void for_each_row_piece(const ConvGeometry& g, int64_t p0, int64_t p1, Col* out,
                        const Piece& piece) {
  int64_t oh = p0 / g.wo, ow0 = p0 % g.wo;
  for (int64_t p = p0; p < p1; ++oh, ow0 = 0) {
    const int64_t ow1 = std::min(g.wo, ow0 + (p1 - p));
    piece(oh, ow0, ow1, out);
    out += ow1 - ow0;
    p += ow1 - ow0;
  }
}

// col = im2col(x) for channels [c0, c1) of one sample and group, positions [p0, p1).
template <class T>
void im2col(const ConvGeometry& g, const T* x, int64_t c0, int64_t c1, int64_t p0, int64_t p1,
            T* col) {
  const int64_t width = p1 - p0, sh = g.stride_h, sw = g.stride_w, wo = g.wo;
  // Unit strides and an output as wide as the input ("same" padding), whole plane:
  // the inside elements of all output rows of a tap form one run in x and in col.
  const bool dense = p0 == 0 && p1 == g.plane_out() && sh == 1 && sw == 1 && g.w == wo;
  for_each_tap(
      g, x, c0, c1, width, col,
      [&](const T* plane, TapRange rows, TapRange cols, int64_t off_h, int64_t off_w, T* out) {
        if (dense) {
          if (rows.lo >= rows.hi || cols.lo >= cols.hi) {
            std::fill(out, out + width, T(0));
            return;
          }
          const int64_t begin = rows.lo * wo + cols.lo, end = (rows.hi - 1) * wo + cols.hi;
          const T* src = plane + (rows.lo + off_h) * g.w + cols.lo + off_w;
          std::fill(out, out + begin, T(0));
          std::copy(src, src + (end - begin), out + begin);
          std::fill(out + end, out + width, T(0));
          // The run also covered the padding columns between rows: zero them again.
          for (int64_t oh = rows.lo; oh + 1 < rows.hi; ++oh) {
            for (int64_t i = oh * wo + cols.hi; i < (oh + 1) * wo + cols.lo; ++i) out[i] = T(0);
          }
          return;
        }
        for_each_row_piece(g, p0, p1, out, [&](int64_t oh, int64_t ow0, int64_t ow1, T* o) {
          if (oh < rows.lo || oh >= rows.hi) {
            for (int64_t ow = ow0; ow < ow1; ++ow) o[ow - ow0] = T(0);
            return;
          }
          const T* in_row = plane + (oh * sh + off_h) * g.w;
          const int64_t lo = std::clamp(cols.lo, ow0, ow1), hi = std::clamp(cols.hi, lo, ow1);
          for (int64_t ow = ow0; ow < lo; ++ow) o[ow - ow0] = T(0);
          for (int64_t ow = lo; ow < hi; ++ow) o[ow - ow0] = in_row[ow * sw + off_w];
          for (int64_t ow = hi; ow < ow1; ++ow) o[ow - ow0] = T(0);
        });
      });
}

// x += col2im(col) for channels [c0, c1) of one sample and group, positions [p0, p1).
// `col` is scratch: the dense path zeroes some of its elements.
template <class T>
void col2im_add(const ConvGeometry& g, T* col, int64_t c0, int64_t c1, int64_t p0, int64_t p1,
                T* x) {
  const int64_t sh = g.stride_h, sw = g.stride_w, wo = g.wo;
  const bool dense = p0 == 0 && p1 == g.plane_out() && sh == 1 && sw == 1 && g.w == wo;
  for_each_tap(
      g, x, c0, c1, p1 - p0, col,
      [&](T* plane, TapRange rows, TapRange cols, int64_t off_h, int64_t off_w, T* src) {
        if (dense) {
          // As in im2col, the inside elements of all rows form one run in x and in col;
          // zero the padding columns inside the run in col, so they add nothing, and add
          // the run whole. (x starts at +0 and only ever grows by sums, so adding +0
          // changes no bit, not even a zero's sign.)
          if (rows.lo >= rows.hi || cols.lo >= cols.hi) return;
          const int64_t begin = rows.lo * wo + cols.lo, end = (rows.hi - 1) * wo + cols.hi;
          for (int64_t oh = rows.lo; oh + 1 < rows.hi; ++oh) {
            for (int64_t i = oh * wo + cols.hi; i < (oh + 1) * wo + cols.lo; ++i) src[i] = T(0);
          }
          T* __restrict dst = plane + (rows.lo + off_h) * g.w + cols.lo + off_w;
          const T* __restrict from = src + begin;
          for (int64_t i = 0; i < end - begin; ++i) dst[i] += from[i];
          return;
        }
        for_each_row_piece(g, p0, p1, src, [&](int64_t oh, int64_t ow0, int64_t ow1, const T* s) {
          if (oh < rows.lo || oh >= rows.hi) return;
          T* in_row = plane + (oh * sh + off_h) * g.w;
          const int64_t lo = std::clamp(cols.lo, ow0, ow1), hi = std::clamp(cols.hi, lo, ow1);
          if (sw == 1) {
            T* __restrict dst = in_row + lo + off_w;
            const T* __restrict from = s + (lo - ow0);
            for (int64_t i = 0; i < hi - lo; ++i) dst[i] += from[i];
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) in_row[ow * sw + off_w] += s[ow - ow0];
          }
        });
      });
}

// Blocks a small batch needs so that every pool thread gets a task.
int64_t blocks_for_threads(int64_t batch) {
  const int64_t threads = pool().size();
  return batch >= threads ? 1 : ceil_div(threads, std::max<int64_t>(batch, 1));
}

bool use_winograd(const ConvGeometry& g) {
  return winograd_applies(g.cg, g.og, g.kh, g.kw, g.stride_h, g.stride_w, g.dil_h, g.dil_w,
                          g.groups, g.pad_h, g.pad_w);
}

Winograd3x3 winograd_shape(const ConvGeometry& g) {
  return {g.n, g.c, g.o, g.h, g.w, g.ho, g.wo, g.pad_h, g.pad_w};
}

template <class T>
void conv2d_typed(const ConvGeometry& g, const T* x, const T* w, const T* bias, T* y) {
  if constexpr (std::is_same_v<T, float>) {
    if (use_winograd(g)) return winograd_conv3x3(winograd_shape(g), x, w, bias, y);
  }
  const int64_t plane = g.plane_out(), k = g.k();
  const bool direct = g.is_pointwise();
  const int64_t width_max = column_block(plane, direct ? 0 : k, blocks_for_threads(g.n));
  const int64_t blocks = ceil_div(plane, width_max);
  SerialBlasScope serial;
  run_tasks(g.n * blocks, [&](int64_t task) {
    const int64_t n = task / blocks, p0 = task % blocks * width_max;
    const int64_t p1 = std::min(plane, p0 + width_max), width = p1 - p0;
    T* col = direct ? nullptr : scratch<T>(ScratchSlot::Columns, static_cast<size_t>(k * width));
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const T* x_ng = x + (n * g.c + grp * g.cg) * g.plane_in();
      T* y_ng = y + (n * g.o + grp * g.og) * plane + p0;
      // The bias goes in first and the GEMM adds onto it (beta = 1): one pass over y
      // fewer than a GEMM that zero-fills y followed by a bias pass.
      for (int64_t oc = 0; oc < g.og; ++oc) {
        std::fill(y_ng + oc * plane, y_ng + oc * plane + width, bias[grp * g.og + oc]);
      }
      const T* cols = x_ng + p0;
      int64_t ldb = g.plane_in();
      if (!direct) {
        im2col(g, x_ng, 0, g.cg, p0, p1, col);
        cols = col;
        ldb = width;
      }
      gemm(false, false, g.og, width, k, T(1), w + grp * g.og * k, k, cols, ldb, T(1), y_ng, plane);
    }
  });
}

template <class T>
void conv2d_backward_input_typed(const ConvGeometry& g, const T* grad_y, const T* w, T* grad_x) {
  if constexpr (std::is_same_v<T, float>) {
    if (use_winograd(g)) {
      return winograd_conv3x3_backward_input(winograd_shape(g), grad_y, w, grad_x);
    }
  }
  const int64_t plane = g.plane_out(), k = g.k(), taps = g.taps();
  // Tasks split a sample's channels when the batch is small: channels own disjoint
  // planes of grad_x, so tasks never write the same element.
  const int64_t cblocks = std::min(g.cg, blocks_for_threads(g.n * g.groups));
  const int64_t cwidth = ceil_div(g.cg, cblocks);
  SerialBlasScope serial;
  run_tasks(g.n * g.groups * cblocks, [&](int64_t task) {
    const int64_t cb = task % cblocks, grp = task / cblocks % g.groups;
    const int64_t n = task / cblocks / g.groups;
    const int64_t c0 = cb * cwidth, c1 = std::min(g.cg, c0 + cwidth);
    if (c0 >= c1) return;
    const T* gy = grad_y + (n * g.o + grp * g.og) * plane;
    const T* wg = w + grp * g.og * k;
    T* gx = grad_x + (n * g.c + grp * g.cg) * g.plane_in();
    if (g.is_pointwise()) {  // grad_x rows are the columns themselves
      gemm(true, false, c1 - c0, plane, g.og, T(1), wg + c0, k, gy, plane, T(0),
           gx + c0 * g.plane_in(), g.plane_in());
      return;
    }
    const int64_t rows = (c1 - c0) * taps;
    const int64_t width_max = column_block(plane, rows, 1);
    T* col = scratch<T>(ScratchSlot::Columns, static_cast<size_t>(rows * width_max));
    // Zeroed here, just before the sums land, while the planes are in cache.
    std::fill(gx + c0 * g.plane_in(), gx + c1 * g.plane_in(), T(0));
    for (int64_t p0 = 0; p0 < plane; p0 += width_max) {
      const int64_t p1 = std::min(plane, p0 + width_max), width = p1 - p0;
      gemm(true, false, rows, width, g.og, T(1), wg + c0 * taps, k, gy + p0, plane, T(0), col,
           width);
      col2im_add(g, col, c0, c1, p0, p1, gx);
    }
  });
}

template <class T>
void conv2d_backward_weight_typed(const ConvGeometry& g, const T* grad_y, const T* x, T* grad_w) {
  if constexpr (std::is_same_v<T, float>) {
    if (use_winograd(g)) {
      return winograd_conv3x3_backward_weight(winograd_shape(g), x, grad_y, grad_w);
    }
  }
  const int64_t plane = g.plane_out(), k = g.k(), weight_size = g.o * k;
  if (g.n == 0) {
    std::fill(grad_w, grad_w + weight_size, T(0));
    return;
  }
  // Partial sums over fixed sample ranges: their number depends on the shapes only,
  // so results do not change with the thread count or timing.
  int64_t parts = std::min<int64_t>(g.n, kMaxPartials);
  if (parts * weight_size > kPartialBudget) {
    parts = std::max<int64_t>(std::min<int64_t>(g.n, pool().size()),
                              kPartialBudget / std::max<int64_t>(weight_size, 1));
    parts = std::max<int64_t>(1, std::min(parts, g.n));
  }
  T* partials =
      parts > 1 ? scratch<T>(ScratchSlot::Partials, static_cast<size_t>((parts - 1) * weight_size))
                : nullptr;
  const bool direct = g.is_pointwise();
  const int64_t width_max = column_block(plane, direct ? 0 : k, 1);
  {
    SerialBlasScope serial;
    run_tasks(parts, [&](int64_t part) {
      T* acc = part == 0 ? grad_w : partials + (part - 1) * weight_size;
      const int64_t n0 = part * g.n / parts, n1 = (part + 1) * g.n / parts;
      T* col =
          direct ? nullptr : scratch<T>(ScratchSlot::Columns, static_cast<size_t>(k * width_max));
      for (int64_t n = n0; n < n1; ++n) {
        for (int64_t grp = 0; grp < g.groups; ++grp) {
          const T* x_ng = x + (n * g.c + grp * g.cg) * g.plane_in();
          const T* gy = grad_y + (n * g.o + grp * g.og) * plane;
          for (int64_t p0 = 0; p0 < plane; p0 += width_max) {
            const int64_t p1 = std::min(plane, p0 + width_max), width = p1 - p0;
            const T* cols = x_ng + p0;
            int64_t ldb = g.plane_in();
            if (!direct) {
              im2col(g, x_ng, 0, g.cg, p0, p1, col);
              cols = col;
              ldb = width;
            }
            const bool first = n == n0 && p0 == 0;
            gemm(false, true, g.og, k, width, T(1), gy + p0, plane, cols, ldb, first ? T(0) : T(1),
                 acc + grp * g.og * k, k);
          }
        }
      }
    });
  }
  if (parts > 1) {
    pool().parallel_for(0, weight_size, kParallelGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        T sum = grad_w[i];
        for (int64_t part = 1; part < parts; ++part) sum += partials[(part - 1) * weight_size + i];
        grad_w[i] = sum;
      }
    });
  }
}

using ConvTypes = TypeList<float, double>;

void conv2d_impl(const OpArgs& args) {
  args.expect_counts(3, 1);
  const TensorView x = args.input(0), w = args.input(1), bias = args.input(2), y = args.output(0);
  const ConvGeometry g = geometry(args, x, w, y);
  expect_shape(bias, {g.o}, "bias");
  for (const TensorView* t : {&w, &bias, &y}) expect_dtype(*t, x.dtype, "operand");
  if (y.numel() == 0) return;
  if (!visit_dtype<ConvTypes>(x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        conv2d_typed<T>(g, x.ptr<const T>(), w.ptr<const T>(), bias.ptr<const T>(), y.ptr<T>());
      })) {
    unsupported_dtype(x.dtype);
  }
}

void conv2d_backward_input_impl(const OpArgs& args) {
  args.expect_counts(2, 1);
  const TensorView grad_y = args.input(0), w = args.input(1), grad_x = args.output(0);
  const ConvGeometry g = geometry(args, grad_x, w, grad_y);
  for (const TensorView* t : {&w, &grad_x}) expect_dtype(*t, grad_y.dtype, "operand");
  if (grad_x.numel() == 0) return;
  if (!visit_dtype<ConvTypes>(grad_y.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        conv2d_backward_input_typed<T>(g, grad_y.ptr<const T>(), w.ptr<const T>(), grad_x.ptr<T>());
      })) {
    unsupported_dtype(grad_y.dtype);
  }
}

void conv2d_backward_weight_impl(const OpArgs& args) {
  args.expect_counts(2, 1);
  const TensorView grad_y = args.input(0), x = args.input(1), grad_w = args.output(0);
  const ConvGeometry g = geometry(args, x, grad_w, grad_y);
  for (const TensorView* t : {&x, &grad_w}) expect_dtype(*t, grad_y.dtype, "operand");
  if (grad_w.numel() == 0) return;
  if (!visit_dtype<ConvTypes>(grad_y.dtype, [&](auto tag) {
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

// float16 and bfloat16 through the float32 kernels (widen.h).
void add_conv_kernels(KernelList& list) {
  constexpr auto supports = &supports_widened<supports_conv>;
  list.push_back(catalogue_entry<op::conv2d>(&run_kernel<widened<conv2d_impl>>, supports, 0));
  list.push_back(catalogue_entry<op::conv2d_backward_input>(
      &run_kernel<widened<conv2d_backward_input_impl>>, supports, 0));
  list.push_back(catalogue_entry<op::conv2d_backward_weight>(
      &run_kernel<widened<conv2d_backward_weight_impl>>, supports, 0));
}

}  // namespace kiln::cpu
