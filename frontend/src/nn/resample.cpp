// F::pad and F::interpolate: both pick source positions along each dimension with
// index_select (reflect, replicate and circular padding; nearest and linear resampling),
// so they run on every backend and are differentiable through index_select. The
// positions are computed on the tensor's device from the sizes (arange and pointwise
// ops, float64 where a scale is involved, as the reference formulas are), never as a
// host list: a huge requested size fails at its first allocation with the device's
// out-of-memory error, not in a host loop. Constant padding joins filled blocks with
// cat; negative padding crops.

#include "kiln/nn/functional.h"
#include "kiln/ops.h"
#include "ops/common.h"

namespace kiln::nn::functional {

namespace {

// 0, 1, ..., n - 1 as `dtype` on `like`'s device.
Tensor iota(const Tensor& like, int64_t n, DType dtype) {
  return arange(n, TensorOptions(dtype).device(like.device()));
}

// Pads dimension d by `before` and `after` (both >= 0) with the given mode.
Tensor pad_dim(const Tensor& x, int64_t d, int64_t before, int64_t after, const std::string& mode,
               double value) {
  const int64_t n = x.size(d);
  if (mode == "constant") {
    std::vector<Tensor> parts;
    auto block = [&](int64_t len) {
      std::vector<int64_t> shape = x.shape().vec();
      shape[static_cast<size_t>(d)] = len;
      return full(shape, value, TensorOptions(x.dtype()).device(x.device()));
    };
    if (before > 0) parts.push_back(block(before));
    parts.push_back(x);
    if (after > 0) parts.push_back(block(after));
    return parts.size() == 1 ? x : cat(parts, d);
  }
  KILN_CHECK(n > 0, "pad: mode '", mode, "' cannot pad dimension ", d, " of size 0");
  if (mode == "reflect")
    KILN_CHECK(before < n && after < n, "pad: reflect padding (", before, ", ", after,
               ") must be smaller than the size ", n, " of dimension ", d);
  if (mode == "circular")  // PyTorch's rule: the padding wraps around at most once
    KILN_CHECK(before <= n && after <= n, "pad: circular padding (", before, ", ", after,
               ") would wrap around dimension ", d, " of size ", n, " more than once");
  // i runs over [-before, n + after); j is the source position it reads.
  const Tensor i = iota(x, before + n + after, DType::Int64) - before;
  Tensor j;
  if (mode == "replicate") {
    j = clamp(i, 0, n - 1);
  } else if (mode == "reflect") {  // -i before the start, 2(n - 1) - i past the end
    j = (n - 1) - abs((n - 1) - abs(i));
  } else {  // circular: i wraps at most once
    j = where(i < 0, i + n, where(i >= n, i - n, i));
  }
  return index_select(x, d, j);
}

}  // namespace

Tensor pad(const Tensor& x, IntArrayRef padding, const std::string& mode, double value) {
  detail::impl_of(x, "pad");
  KILN_CHECK(mode == "constant" || mode == "reflect" || mode == "replicate" || mode == "circular",
             "pad: mode must be constant, reflect, replicate or circular, got '", mode, "'");
  KILN_CHECK(padding.size() % 2 == 0 && static_cast<int64_t>(padding.size()) / 2 <= x.dim(),
             "pad: expects (before, after) pairs for at most ", x.dim(), " dimensions, got ",
             padding);
  const int64_t pairs = static_cast<int64_t>(padding.size()) / 2;
  if (mode != "constant")
    KILN_CHECK(pairs <= x.dim() - 1, "pad: mode '", mode,
               "' pads at most all but the first dimension (the batch), got ", pairs,
               " pairs for shape ", x.shape());
  Tensor y = x;
  for (int64_t k = 0; k < pairs; ++k) {  // pair k pads dimension -1 - k
    const int64_t d = x.dim() - 1 - k;
    int64_t before = padding[static_cast<size_t>(2 * k)];
    int64_t after = padding[static_cast<size_t>(2 * k + 1)];
    if (before < 0 || after < 0) {  // negative padding crops
      KILN_CHECK(mode == "constant", "pad: negative padding needs mode 'constant'");
      const int64_t start = std::max<int64_t>(0, -before),
                    stop = y.size(d) + std::min<int64_t>(0, after);
      KILN_CHECK(stop >= start, "pad: padding (", before, ", ", after, ") crops dimension ", d,
                 " of size ", y.size(d), " below zero");
      y = y.narrow(d, start, stop - start);
      before = std::max<int64_t>(0, before);
      after = std::max<int64_t>(0, after);
    }
    int64_t padded = 0;
    KILN_CHECK(!__builtin_add_overflow(y.size(d), before, &padded) &&
                   !__builtin_add_overflow(padded, after, &padded),
               "pad: padding (", before, ", ", after, ") of dimension ", d, " (size ", y.size(d),
               ") overflows int64");
    y = pad_dim(y, d, before, after, mode, value);
  }
  return y;
}

Tensor interpolate(const Tensor& x, IntArrayRef size, const std::string& mode, bool align_corners) {
  detail::impl_of(x, "interpolate");
  KILN_CHECK(mode == "nearest" || mode == "linear" || mode == "bilinear",
             "interpolate: mode must be nearest, linear or bilinear, got '", mode, "'");
  const int64_t spatial = x.dim() - 2;
  KILN_CHECK(spatial >= 1 && static_cast<int64_t>(size.size()) == spatial, "interpolate: expects ",
             "[N, C, spatial...] input and one output size per spatial dimension, got shape ",
             x.shape(), " and size ", size);
  KILN_CHECK(mode == "nearest" || (mode == "linear" ? spatial == 1 : spatial == 2),
             "interpolate: mode '", mode, "' expects ", mode == "linear" ? 1 : 2,
             " spatial dimensions, got shape ", x.shape());
  KILN_CHECK(is_floating(x.dtype()) || mode == "nearest",
             "interpolate: linear modes expect a floating-point tensor, got ", x.dtype());
  Tensor y = x;
  for (int64_t k = 0; k < spatial; ++k) {
    const int64_t d = 2 + k, in = x.size(d), out = size[static_cast<size_t>(k)];
    KILN_CHECK(out > 0 && in > 0, "interpolate: sizes must be positive, got ", in, " -> ", out);
    const double scale = static_cast<double>(in) / static_cast<double>(out);
    const Tensor i = iota(y, out, DType::Float64);
    if (mode == "nearest") {  // PyTorch's 'nearest': floor(i * in / out)
      y = index_select(y, d, clamp((i * scale).to(DType::Int64), std::nullopt, in - 1));
      continue;
    }
    // The source coordinate (>= 0, so truncation is floor), its two neighbours and the
    // weight of the upper one.
    const Tensor src =
        align_corners ? (out > 1 ? i * static_cast<double>(in - 1) / static_cast<double>(out - 1)
                                 : zeros_like(i))
                      : clamp((i + 0.5) * scale - 0.5, 0.0, std::nullopt);
    const Tensor lo = clamp(src.to(DType::Int64), std::nullopt, in - 1);
    const Tensor hi = clamp(lo + 1, std::nullopt, in - 1);
    std::vector<int64_t> wshape(static_cast<size_t>(y.dim()), 1);
    wshape[static_cast<size_t>(d)] = out;
    const Tensor upper = (src - lo).reshape(wshape).to(y.dtype());
    const Tensor lower = (1.0 - (src - lo)).reshape(wshape).to(y.dtype());
    const Tensor a = index_select(y, d, lo), b = index_select(y, d, hi);
    // PyTorch's form (1 − λ)·a + λ·b, not a + (b − a)·λ: next to an infinity the latter
    // gives inf − inf = NaN where PyTorch gives the infinity.
    y = a * lower + b * upper;
  }
  return y;
}

}  // namespace kiln::nn::functional
