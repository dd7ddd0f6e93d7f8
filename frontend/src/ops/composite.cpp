// Ops made of other ops: predicates (isnan, isinf, isfinite), reductions built on the
// catalogue's (std, norm, any, all), rearrangements (flip, roll, repeat, tile, tril,
// triu, diag) and the public scatter_add / index_add. Being compositions of catalogue
// ops, they run on every backend and take their gradients from the ops they are made
// of; only norm records its own node (p = 2 and others for PyTorch's zero gradient at 0,
// ±inf for its sharing among ties and NaNs).

#include <algorithm>
#include <cmath>
#include <limits>

#include "autograd/record.h"
#include "kiln/autograd.h"
#include "kiln/nn/functional.h"
#include "kiln/ops.h"
#include "kiln/profiler.h"
#include "ops/common.h"

namespace kiln {

namespace ag = detail::autograd_impl;
constexpr double kInfinity = std::numeric_limits<double>::infinity();
using Grads = std::vector<Tensor>;
using Saved = std::vector<Tensor>;

namespace {

// int64 positions on x's device.
Tensor positions(const Tensor& like, int64_t start, int64_t end, int64_t step = 1) {
  return arange(start, end, step, TensorOptions(DType::Int64).device(like.device()));
}

Tensor bool_full(const Tensor& x, bool value) {
  return full(x.shape(), value, TensorOptions(DType::Bool).device(x.device()));
}

}  // namespace

// -- predicates -------------------------------------------------------------------------

Tensor isnan(const Tensor& x) {
  detail::impl_of(x, "isnan");
  if (!is_floating(x.dtype())) return bool_full(x, false);
  return x != x;
}

Tensor isinf(const Tensor& x) {
  detail::impl_of(x, "isinf");
  if (!is_floating(x.dtype())) return bool_full(x, false);
  NoGradGuard no_grad;
  return abs(x) == std::numeric_limits<double>::infinity();
}

Tensor isfinite(const Tensor& x) {
  detail::impl_of(x, "isfinite");
  if (!is_floating(x.dtype())) return bool_full(x, true);
  NoGradGuard no_grad;
  return (x - x) == 0;  // 0 for finite values, NaN for inf and NaN
}

// -- reductions -------------------------------------------------------------------------

Tensor std(const Tensor& x, IntArrayRef dims, int64_t correction, bool keepdim) {
  // A half-precision variance overflows long before its square root does (std 439 is a
  // variance of 192721): compute in float32 and round once, as PyTorch does.
  const bool half = x.dtype() == DType::Float16 || x.dtype() == DType::BFloat16;
  if (half) return std(x.to(DType::Float32), dims, correction, keepdim).to(x.dtype());
  Tensor v = var(x, dims, correction, keepdim);
  Tensor s;
  {
    NoGradGuard no_grad;  // recorded below: sqrt's gradient would be inf at 0
    s = sqrt(v);
  }
  // d std = d var / (2 std), and 0 where the std is 0 (PyTorch's rule): one constant
  // slice must not make every gradient NaN.
  if (ag::needs_grad({&v}))
    ag::record("StdBackward", s, {&v}, {s}, [](const Saved& saved, const Tensor& g) -> Grads {
      return {where(saved[0] == 0, 0.0, g / (saved[0] * 2.0))};
    });
  return s;
}

namespace {

// The ±inf norm, max or min of |x|, with PyTorch 1.13's gradient (norm_backward): the
// elements whose |x| equals the norm, or that are NaN where the norm is NaN, share the
// gradient evenly, times sign(x) with sign(NaN) = 0. A NaN norm thus sends 0 to its NaN
// elements, not the NaN that amax's rule (0/0 shares, sign(NaN) = NaN) would give.
Tensor extreme_norm(const Tensor& x, double p, IntArrayRef dims, bool keepdim) {
  Tensor n;
  {
    NoGradGuard no_grad;  // recorded below as one node
    n = p > 0 ? amax(abs(x), dims, keepdim) : amin(abs(x), dims, keepdim);
  }
  if (!ag::needs_grad({&x})) return n;
  std::vector<int64_t> reduced, kept;  // reduced: the dims summed over; kept: n's keepdim shape
  for (int64_t d = 0; d < x.dim(); ++d) {
    const bool r = dims.empty() || std::any_of(dims.begin(), dims.end(), [&](int64_t e) {
                     return detail::wrap_dim(e, x.dim(), "norm") == d;
                   });
    if (r) reduced.push_back(d);
    kept.push_back(r ? 1 : x.size(d));
  }
  ag::record("NormBackward", n, {&x}, {x, n},
             [reduced, kept](const Saved& s, const Tensor& g) -> Grads {
               const Tensor& x = s[0];
               Tensor nk = s[1].reshape(kept), gk = g.reshape(kept);
               Tensor hit = logical_or(abs(x) == nk, logical_and(isnan(x), isnan(nk)));
               Tensor hits = hit.to(x.dtype());
               Tensor count = x.dim() == 0 ? hits : hits.sum(reduced, /*keepdim=*/true);
               Tensor slope = where(isnan(x), 0.0, sign(x)) * hits;
               return {slope * (gk / count)};
             });
  return n;
}

}  // namespace

Tensor norm(const Tensor& x, double p, IntArrayRef dims, bool keepdim) {
  detail::impl_of(x, "norm");
  KILN_CHECK(is_floating(x.dtype()), "norm: expects a floating-point tensor, got ", x.dtype());
  KILN_CHECK(!std::isnan(p) && (p >= 0 || p == -kInfinity),
             "norm: p must be >= 0, infinity or -infinity, got ", p);
  if (x.dtype() == DType::Float16 || x.dtype() == DType::BFloat16)  // |x|^p overflows them
    return norm(x.to(DType::Float32), p, dims, keepdim).to(x.dtype());
  if (std::isinf(p)) return extreme_norm(x, p, dims, keepdim);
  if (p == 0) return sum((x != 0).to(x.dtype()), dims, keepdim);
  if (p == 1) return sum(abs(x), dims, keepdim);
  Tensor n;
  {
    NoGradGuard no_grad;  // recorded below as one node
    n = p == 2 ? sqrt(sum(x * x, dims, keepdim)) : pow(sum(pow(abs(x), p), dims, keepdim), 1.0 / p);
  }
  if (ag::needs_grad({&x})) {
    // d‖x‖/dx = sgn(x)·|x|^(p−1) / ‖x‖^(p−1), and 0 where x or ‖x‖ is 0 (PyTorch's
    // subgradient, which the composed formula would make NaN).
    std::vector<int64_t> kept;  // the reduced shape with the reduced dims kept as 1
    if (!keepdim && x.dim() > 0) {
      std::vector<bool> reduced(static_cast<size_t>(x.dim()), dims.empty());
      for (int64_t d : dims)
        reduced[static_cast<size_t>(detail::wrap_dim(d, x.dim(), "norm"))] = true;
      for (int64_t d = 0; d < x.dim(); ++d)
        kept.push_back(reduced[static_cast<size_t>(d)] ? 1 : x.size(d));
    }
    ag::record("NormBackward", n, {&x}, {x, n},
               [kept, p](const Saved& s, const Tensor& g) -> Grads {
                 Tensor nk = kept.empty() ? s[1] : s[1].reshape(kept);
                 Tensor gk = kept.empty() ? g : g.reshape(kept);
                 if (p == 2) return {s[0] * where(nk == 0, 0.0, gk / nk)};
                 Tensor scale = where(nk == 0, 0.0, gk / pow(nk, p - 1));
                 Tensor slope = where(s[0] == 0, 0.0, sign(s[0]) * pow(abs(s[0]), p - 1));
                 return {slope * scale};
               });
  }
  return n;
}

// any/all of a uint8 tensor are uint8, as PyTorch's (its older convention); bool else.
Tensor any(const Tensor& x, IntArrayRef dims, bool keepdim) {
  detail::impl_of(x, "any");
  Tensor r = sum((x != 0).to(DType::Int64), dims, keepdim) > 0;
  return x.dtype() == DType::UInt8 ? r.to(DType::UInt8) : r;
}

Tensor all(const Tensor& x, IntArrayRef dims, bool keepdim) {
  detail::impl_of(x, "all");
  Tensor r = sum((x == 0).to(DType::Int64), dims, keepdim) == 0;
  return x.dtype() == DType::UInt8 ? r.to(DType::UInt8) : r;
}

// -- rearranging ------------------------------------------------------------------------

Tensor flip(const Tensor& x, IntArrayRef dims) {
  detail::impl_of(x, "flip");
  if (x.dim() == 0) {  // nothing to reverse; the dims must still be valid
    for (int64_t dim : dims) detail::wrap_dim(dim, 0, "flip");
    return x.clone();
  }
  std::vector<bool> seen(static_cast<size_t>(x.dim()), false);
  Tensor y = x;
  for (int64_t dim : dims) {
    const int64_t d = detail::wrap_dim(dim, x.dim(), "flip");
    KILN_CHECK(!seen[static_cast<size_t>(d)], "flip: dimension ", d, " appears twice in ", dims);
    seen[static_cast<size_t>(d)] = true;
    const int64_t n = x.size(d);
    if (n > 1) y = index_select(y, d, positions(x, n - 1, -1, -1));
  }
  return y.shares_storage_with(x) ? y.clone() : y;  // always a copy, as torch.flip
}

Tensor roll(const Tensor& x, IntArrayRef shifts, IntArrayRef dims) {
  detail::impl_of(x, "roll");
  if (dims.empty()) {
    KILN_CHECK(shifts.size() == 1, "roll: without dims, expects one shift, got ", shifts.size());
    return roll(x.flatten(), shifts, {0}).reshape(x.shape());
  }
  KILN_CHECK(shifts.size() == dims.size(), "roll: ", shifts.size(), " shifts for ", dims.size(),
             " dims; expects one shift per dim");
  if (x.dim() == 0) {
    for (int64_t dim : dims) detail::wrap_dim(dim, 0, "roll");
    return x.clone();
  }
  Tensor y = x;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = detail::wrap_dim(dims[i], x.dim(), "roll");
    const int64_t n = x.size(d);
    if (n == 0) continue;
    const int64_t s = ((shifts[i] % n) + n) % n;
    if (s != 0) y = cat({y.narrow(d, n - s, s), y.narrow(d, 0, n - s)}, d);
  }
  return y.shares_storage_with(x) ? y.clone() : y;
}

Tensor tile(const Tensor& x, IntArrayRef reps) {
  detail::impl_of(x, "tile");
  std::vector<int64_t> r(reps.begin(), reps.end());
  while (static_cast<int64_t>(r.size()) < x.dim()) r.insert(r.begin(), 1);
  return x.repeat(r);
}

namespace {

// Zeroes the last two dims' elements outside the triangle: col - row <= k (lower) or
// col - row >= k (upper).
Tensor triangle(const Tensor& x, int64_t diagonal, bool lower, const char* op) {
  detail::impl_of(x, op);
  KILN_CHECK(x.dim() >= 2, op, ": expects at least 2 dimensions, got shape ", x.shape());
  Tensor offset = positions(x, 0, x.size(-1)) - positions(x, 0, x.size(-2)).unsqueeze(1);
  return masked_fill(x, lower ? offset > diagonal : offset < diagonal, 0);
}

}  // namespace

Tensor tril(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, true, "tril"); }
Tensor triu(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, false, "triu"); }

Tensor diag(const Tensor& x, int64_t diagonal) {
  detail::impl_of(x, "diag");
  KILN_CHECK(x.dim() == 1 || x.dim() == 2, "diag: expects a 1-D or 2-D tensor, got shape ",
             x.shape());
  const int64_t k = diagonal;
  if (x.dim() == 1) {
    // A square matrix with x on diagonal k: x padded to the side, broadcast along the
    // rows (k >= 0: row i holds x[i]) or the columns (k < 0), then masked.
    const int64_t len = x.size(0), n = len + (k >= 0 ? k : -k);
    Tensor padded =
        n == len ? x : cat({x, zeros({n - len}, TensorOptions(x.dtype()).device(x.device()))});
    Tensor spread =
        k >= 0 ? padded.unsqueeze(1).expand({n, n}) : padded.unsqueeze(0).expand({n, n});
    Tensor rows = positions(x, 0, n).unsqueeze(1);
    Tensor cols = positions(x, 0, n);
    return masked_fill(spread, (cols - rows) != k, 0);
  }
  const int64_t rows = x.size(0), cols = x.size(1);
  const int64_t len =
      std::max<int64_t>(0, k >= 0 ? std::min(rows, cols - k) : std::min(rows + k, cols));
  const int64_t first = k >= 0 ? k : -k * cols;
  Tensor index = positions(x, 0, len) * (cols + 1) + first;
  return index_select(x.reshape({-1}), 0, index);
}

// -- accumulating writes ----------------------------------------------------------------

namespace {

void check_index_dtype(const Tensor& index, const char* op) {
  KILN_CHECK(index.dtype() == DType::Int64 || index.dtype() == DType::Int32, op,
             ": the index must be int64 or int32, got ", index.dtype());
}

}  // namespace

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  detail::check_same_device("scatter_add", {&x, &index, &src});
  check_index_dtype(index, "scatter_add");
  KILN_CHECK(index.dim() == x.dim() && src.dim() == x.dim(), "scatter_add: x ", x.shape(),
             ", index ", index.shape(), " and src ", src.shape(),
             " must have the same number of dimensions");
  const int64_t d = detail::wrap_dim(dim, x.dim(), "scatter_add");
  for (int64_t i = 0; i < x.dim(); ++i) {
    KILN_CHECK(index.size(i) <= src.size(i), "scatter_add: index shape ", index.shape(),
               " exceeds src shape ", src.shape(), " in dimension ", i);
    KILN_CHECK(i == d || index.size(i) <= x.size(i), "scatter_add: index shape ", index.shape(),
               " exceeds x shape ", x.shape(), " in dimension ", i);
  }
  if (x.dtype() == DType::Bool) {  // no bool kernel: a logical or, counted in int64
    NoGradGuard no_grad;           // bool tensors carry no gradient
    return scatter_add(x.to(DType::Int64), d, index, src.to(DType::Int64)) != int64_t{0};
  }
  Tensor idx = detail::cast(index, DType::Int64).contiguous();
  Tensor part = src;
  for (int64_t i = 0; i < x.dim(); ++i) part = part.narrow(i, 0, index.size(i));
  part = detail::cast(part, x.dtype()).contiguous();
  Tensor out = x.clone();
  if (idx.numel() > 0)
    detail::dispatch(detail::attrs::scatter_add{.dim = d}, {idx.impl().get(), part.impl().get()},
                     {out.impl().get()});
  if (ag::needs_grad({&x, &src}))
    ag::record("ScatterAddBackward", out, {&x, &src}, {idx},
               [d, src_shape = src.shape().vec(), src_dtype = src.dtype()](
                   const Saved& s, const Tensor& g) -> Grads {
                 Tensor picked = gather(g, d, s[0]);
                 // Zero-padded back to src's shape: elements past the index got no use.
                 Tensor dsrc = zeros(src_shape, TensorOptions(src_dtype).device(g.device()));
                 Tensor view = dsrc;
                 for (int64_t i = 0; i < dsrc.dim(); ++i) view = view.narrow(i, 0, picked.size(i));
                 view.copy_(picked);
                 return {g, dsrc};
               });
  return out;
}

namespace {

// How often `index` names each position of x (int64, x's shape); scatter_add checks the
// arguments.
Tensor hit_counts(const Tensor& x, int64_t dim, const Tensor& index) {
  const TensorOptions i64 = TensorOptions(DType::Int64).device(x.device());
  return scatter_add(zeros(x.shape(), i64), dim, index, ones(index.shape(), i64));
}

}  // namespace

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  KILN_CHECK(src.dtype() == x.dtype(), "scatter: src is ", src.dtype(), " where x is ", x.dtype());
  if (x.dtype() == DType::Bool)  // scatter_add has no bool kernel: 0/1 in uint8
    return scatter(x.to(DType::UInt8), dim, index, src.to(DType::UInt8)).to(DType::Bool);
  Tensor hits = hit_counts(x, dim, index);
  if (hits.numel() > 0) {
    Tensor most = hits.max();
    auto scope = profiler::record_function("scatter: read the count (syncs)");
    const int64_t n = most.item<int64_t>();
    KILN_CHECK(n <= 1, "scatter: index names a position of x ", n,
               " times; which value would win is unspecified (PyTorch leaves it to the "
               "backend), so Kiln refuses: use scatter_add or index_put_ with accumulate");
  }
  // Each named position receives exactly one element of src, added to -0.0 for floats
  // (so that a written -0.0 stays -0.0).
  const TensorOptions like = TensorOptions(x.dtype()).device(x.device());
  Tensor base = is_floating(x.dtype()) ? full(x.shape(), -0.0, like) : zeros(x.shape(), like);
  return where(hits > int64_t{0}, scatter_add(base, dim, index, src), x);
}

// One value written, so a position named twice is no conflict.
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, Scalar value) {
  return where(hit_counts(x, dim, index) > int64_t{0},
               full(x.shape(), value, TensorOptions(x.dtype()).device(x.device())), x);
}

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  detail::check_same_device("index_add", {&x, &index, &src});
  check_index_dtype(index, "index_add");
  KILN_CHECK(index.dim() <= 1, "index_add: the index must be 1-D, got shape ", index.shape());
  const int64_t d = detail::wrap_dim(dim, x.dim(), "index_add");
  Tensor idx = detail::cast(index, DType::Int64).reshape({-1}).contiguous();
  KILN_CHECK(src.dim() == x.dim(), "index_add: src ", src.shape(), " and x ", x.shape(),
             " must have the same number of dimensions");
  for (int64_t i = 0; i < x.dim(); ++i)
    KILN_CHECK(i == d ? src.size(i) == idx.numel() : src.size(i) == x.size(i), "index_add: src ",
               src.shape(), " must match x ", x.shape(), " outside dimension ", d,
               " and have one slice per index (", idx.numel(), ") along it");
  if (x.dtype() == DType::Bool) {  // no bool kernel: a logical or, counted in int64
    NoGradGuard no_grad;           // bool tensors carry no gradient
    return index_add(x.to(DType::Int64), d, idx, src.to(DType::Int64)) != int64_t{0};
  }
  Tensor part = detail::cast(src, x.dtype()).contiguous();
  Tensor out = x.clone();
  if (part.numel() > 0)
    detail::dispatch(detail::attrs::index_add{.dim = d}, {idx.impl().get(), part.impl().get()},
                     {out.impl().get()});
  else  // nothing to add, so no kernel reads the index: checked here, as PyTorch does
    detail::check_index_in_range(idx, x.size(d), d, "index_add");
  if (ag::needs_grad({&x, &src}))
    ag::record("IndexAddBackward", out, {&x, &src}, {idx},
               [d, src_dtype = src.dtype()](const Saved& s, const Tensor& g) -> Grads {
                 return {g, index_select(g, d, s[0]).to(src_dtype)};
               });
  return out;
}

// -- nn::functional ---------------------------------------------------------------------

namespace nn::functional {

Tensor one_hot(const Tensor& labels, int64_t num_classes) {
  detail::impl_of(labels, "one_hot");
  KILN_CHECK(labels.dtype() == DType::Int64 || labels.dtype() == DType::Int32,
             "one_hot: expects int64 or int32 class labels, got ", labels.dtype());
  KILN_CHECK(num_classes >= -1, "one_hot: num_classes must be -1 or >= 0, got ", num_classes);
  int64_t lo = 0, hi = -1;
  if (labels.numel() > 0) {
    const std::vector<int64_t> range =
        stack({labels.min(), labels.max()}).to(DType::Int64).to_vector<int64_t>();
    lo = range[0];
    hi = range[1];
  }
  KILN_CHECK(num_classes != -1 || labels.numel() > 0,
             "one_hot: cannot infer the number of classes from empty labels; pass num_classes");
  const int64_t classes = num_classes == -1 ? hi + 1 : num_classes;
  KILN_CHECK(lo >= 0 && hi < classes, "one_hot: labels range over [", lo, ", ", hi,
             "], outside the classes [0, ", classes, ")");
  return (labels.unsqueeze(-1) == positions(labels, 0, classes)).to(DType::Int64);
}

}  // namespace nn::functional

// -- methods ------------------------------------------------------------------------------

Tensor Tensor::isnan() const { return kiln::isnan(*this); }
Tensor Tensor::isinf() const { return kiln::isinf(*this); }
Tensor Tensor::isfinite() const { return kiln::isfinite(*this); }
Tensor Tensor::std(IntArrayRef dims, int64_t correction, bool keepdim) const {
  return kiln::std(*this, dims, correction, keepdim);
}
Tensor Tensor::norm(double p, IntArrayRef dims, bool keepdim) const {
  return kiln::norm(*this, p, dims, keepdim);
}
Tensor Tensor::any(IntArrayRef dims, bool keepdim) const { return kiln::any(*this, dims, keepdim); }
Tensor Tensor::all(IntArrayRef dims, bool keepdim) const { return kiln::all(*this, dims, keepdim); }
Tensor Tensor::flip(IntArrayRef dims) const { return kiln::flip(*this, dims); }
Tensor Tensor::roll(IntArrayRef shifts, IntArrayRef dims) const {
  return kiln::roll(*this, shifts, dims);
}

Tensor Tensor::repeat(IntArrayRef reps) const {
  detail::impl_of(*this, "repeat");
  KILN_CHECK(static_cast<int64_t>(reps.size()) >= dim(), "repeat: ", reps.size(),
             " repeats for a tensor of ", dim(), " dimensions; expects at least one per dimension");
  for (int64_t r : reps) KILN_CHECK(r >= 0, "repeat: repeats must be >= 0, got ", reps);
  // [s0, s1] -> [1, s0, 1, s1] -> expand to [r0, s0, r1, s1] -> reshape [r0*s0, r1*s1].
  const int64_t lead = static_cast<int64_t>(reps.size()) - dim();
  std::vector<int64_t> spread, expanded, result;
  for (size_t i = 0; i < reps.size(); ++i) {
    const int64_t s = static_cast<int64_t>(i) < lead ? 1 : size(static_cast<int64_t>(i) - lead);
    int64_t n = 0;
    KILN_CHECK(!__builtin_mul_overflow(reps[i], s, &n), "repeat: ", reps[i], " repeats of ", s,
               " elements overflow int64");
    spread.insert(spread.end(), {1, s});
    expanded.insert(expanded.end(), {reps[i], s});
    result.push_back(n);
  }
  return reshape(spread).expand(expanded).contiguous().reshape(result);
}

Tensor Tensor::tile(IntArrayRef reps) const { return kiln::tile(*this, reps); }
Tensor Tensor::tril(int64_t diagonal) const { return kiln::tril(*this, diagonal); }
Tensor Tensor::triu(int64_t diagonal) const { return kiln::triu(*this, diagonal); }
Tensor Tensor::diag(int64_t diagonal) const { return kiln::diag(*this, diagonal); }
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const {
  return kiln::scatter(*this, dim, index, src);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, Scalar value) const {
  return kiln::scatter(*this, dim, index, value);
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src) {
  detail::impl_of(*this, "scatter_");
  return copy_(kiln::scatter(*this, dim, index, src));
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, Scalar value) {
  detail::impl_of(*this, "scatter_");
  return copy_(kiln::scatter(*this, dim, index, value));
}
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return kiln::scatter_add(*this, dim, index, src);
}
Tensor Tensor::index_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return kiln::index_add(*this, dim, index, src);
}

}  // namespace kiln
