// F::pad and F::interpolate: both pick source positions along each dimension, worked
// out on the host from the sizes alone, with index_select (reflect, replicate and
// circular padding; nearest and linear resampling), so they run on every backend and
// are differentiable through index_select. Constant padding joins filled blocks with
// cat; negative padding crops.

#include <algorithm>
#include <cmath>

#include "kiln/nn/functional.h"
#include "kiln/ops.h"
#include "ops/common.h"

namespace kiln::nn::functional {

namespace {

Tensor positions(const Tensor& like, const std::vector<int64_t>& index) {
  return from_vector<int64_t>(index).to(like.device());
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
  std::vector<int64_t> index;
  for (int64_t i = -before; i < n + after; ++i) {
    int64_t j = i;
    if (mode == "replicate") {
      j = std::clamp<int64_t>(i, 0, n - 1);
    } else if (mode == "reflect") {
      j = i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i;
    } else {  // circular
      j = ((i % n) + n) % n;
    }
    index.push_back(j);
  }
  return index_select(x, d, positions(x, index));
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
    if (mode == "nearest") {  // PyTorch's 'nearest': floor(i * in / out)
      std::vector<int64_t> index;
      for (int64_t i = 0; i < out; ++i)
        index.push_back(std::min<int64_t>(static_cast<int64_t>(std::floor(i * scale)), in - 1));
      y = index_select(y, d, positions(y, index));
      continue;
    }
    std::vector<int64_t> lo, hi;
    std::vector<double> weight;
    for (int64_t i = 0; i < out; ++i) {
      double src = align_corners ? (out > 1 ? i * static_cast<double>(in - 1) / (out - 1) : 0.0)
                                 : std::max(0.0, (i + 0.5) * scale - 0.5);
      const int64_t i0 = std::min<int64_t>(static_cast<int64_t>(std::floor(src)), in - 1);
      lo.push_back(i0);
      hi.push_back(std::min<int64_t>(i0 + 1, in - 1));
      weight.push_back(src - static_cast<double>(i0));
    }
    std::vector<int64_t> wshape(static_cast<size_t>(y.dim()), 1);
    wshape[static_cast<size_t>(d)] = out;
    std::vector<double> rest(weight.size());
    std::transform(weight.begin(), weight.end(), rest.begin(), [](double l) { return 1.0 - l; });
    auto weights = [&](const std::vector<double>& v) {
      return from_vector<double>(v, wshape).to(y.dtype()).to(y.device());
    };
    Tensor a = index_select(y, d, positions(y, lo)), b = index_select(y, d, positions(y, hi));
    // PyTorch's form (1 − λ)·a + λ·b, not a + (b − a)·λ: next to an infinity the latter
    // gives inf − inf = NaN where PyTorch gives the infinity.
    y = a * weights(rest) + b * weights(weight);
  }
  return y;
}

}  // namespace kiln::nn::functional
