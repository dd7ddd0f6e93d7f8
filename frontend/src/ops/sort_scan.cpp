// Sorting, prefix sums and the data-dependent selections built on them.
//
// cumsum, cumprod and sort are catalogue ops; argsort, topk, nonzero, argwhere,
// where(cond), masked_select, masked_scatter and unique are made of catalogue ops, so they
// run on every backend. The selections whose output size depends on the data (and
// masked_scatter, which checks that source is large enough) read one count back to the
// host: that is their one synchronisation, shown in the profiler as a scope named
// "<op>: read the count (syncs)".

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "autograd/record.h"
#include "kiln/autograd.h"
#include "kiln/ops.h"
#include "kiln/profiler.h"
#include "kiln/random.h"
#include "ops/common.h"

namespace kiln {

namespace ag = detail::autograd_impl;
using Grads = std::vector<Tensor>;
using Saved = std::vector<Tensor>;

namespace {

// The number of true elements of a bool tensor: the one host read of a selection.
int64_t count_true(const Tensor& mask, const char* op) {
  Tensor total = sum(mask.to(DType::Int64));
  auto scope = profiler::record_function(std::string(op) + ": read the count (syncs)");
  return total.item<int64_t>();
}

// The flat positions (int64, ascending) of the true elements of a bool tensor.
Tensor true_positions(const Tensor& mask, const char* op) {
  Tensor flat = mask.reshape({-1});
  const int64_t n = flat.numel();
  const int64_t count = count_true(flat, op);
  const TensorOptions i64 = TensorOptions(DType::Int64).device(mask.device());
  if (count == 0) return zeros({0}, i64);
  // Element i (true) goes to slot cumsum(i) - 1; the false ones to a spare slot past
  // the end, dropped. Each kept slot receives exactly one position.
  Tensor slot = cumsum(flat, 0) - 1;
  Tensor dest = where(flat, slot, scalar_tensor(count, i64));
  return zeros({count + 1}, i64).index_add(0, dest, arange(n, i64)).narrow(0, 0, count);
}

}  // namespace

// -- scans ------------------------------------------------------------------------------

namespace {

// The catalogue's scan along `d` of x as given (0-d: as a 1-element line); integers and
// bool give int64.
template <class Attrs>
Tensor scan(const Tensor& x, int64_t d) {
  Tensor xc = (x.dim() == 0 ? x.reshape({1}) : x).contiguous();
  const DType out_dtype = is_floating(x.dtype()) ? x.dtype() : DType::Int64;
  Tensor out = detail::empty_on(xc, xc.shape(), out_dtype);
  if (out.numel() > 0) detail::dispatch(Attrs{.dim = d}, {xc.impl().get()}, {out.impl().get()});
  return x.dim() == 0 ? out.reshape({}) : out;
}

// What each position receives from itself and every later one along d.
Tensor reverse_cumsum(const Tensor& t, int64_t d) { return flip(cumsum(flip(t, {d}), d), {d}); }

// d/dx_i of Σ_j g_j·y_j with y = cumprod(x): Σ_{j≥i} g_j·Π_{k≤j, k≠i} x_k, without dividing
// by zero. With z the first zero of a line and z2 the second: for i < z it is
// (Σ_{i≤j<z} g_j·y_j) / x_i; for i = z it is y_{z-1}·Σ_{z≤j<z2} g_j·Π_{z<k≤j} x_k; past z
// every product holds x_z, so 0. PyTorch's formula, made of catalogue ops.
Tensor cumprod_backward(const Tensor& x, const Tensor& y, const Tensor& g, int64_t d) {
  Tensor zeros_so_far = cumsum(x == 0.0, d);
  Tensor before = zeros_so_far == int64_t{0};                             // i < z
  Tensor first_zero = logical_and(x == 0.0, zeros_so_far == int64_t{1});  // i = z
  // Terms past each range are masked out, not left to vanish as products holding a zero:
  // an inf or NaN before the zero would make them NaN (PyTorch masks them too).
  Tensor below =
      where(before, reverse_cumsum(where(before, g * y, 0.0), d) / where(before, x, 1.0), 0.0);
  // At z, y_{z-1} multiplies the sum from outside, as in PyTorch, so that an infinite
  // y_{z-1} meets the sum once instead of every term.
  Tensor range = zeros_so_far == int64_t{1};            // z <= j < z2
  Tensor y_before = cumprod(where(before, x, 1.0), d);  // y_{z-1} at z
  Tensor y_after = cumprod(where(logical_and(range, logical_not(first_zero)), x, 1.0), d);
  Tensor at = reverse_cumsum(where(range, g * y_after, 0.0), d) * y_before;
  return where(first_zero, at, below);
}

}  // namespace

Tensor cumsum(const Tensor& x, int64_t dim) {
  detail::impl_of(x, "cumsum");
  const int64_t d = detail::wrap_dim(dim, std::max<int64_t>(x.dim(), 1), "cumsum");
  Tensor out = scan<detail::attrs::cumsum>(x, d);
  if (ag::needs_grad({&x}))
    ag::record("CumsumBackward", out, {&x}, {},
               [d, zero_d = x.dim() == 0](const Saved&, const Tensor& g) -> Grads {
                 if (zero_d) return {g};
                 // Each input feeds every later output: the gradient is the reversed cumsum.
                 return {reverse_cumsum(g, d)};
               });
  return out;
}

Tensor cumprod(const Tensor& x, int64_t dim) {
  detail::impl_of(x, "cumprod");
  const int64_t d = detail::wrap_dim(dim, std::max<int64_t>(x.dim(), 1), "cumprod");
  Tensor out = scan<detail::attrs::cumprod>(x, d);
  if (ag::needs_grad({&x}))
    ag::record(
        "CumprodBackward", out, {&x}, {x, out},
        [d, single = x.dim() == 0 || x.size(d) == 1](const Saved& s, const Tensor& g) -> Grads {
          // y = x along a line of one: the gradient passes even at inf or NaN, where
          // the general formula's y / x would not (PyTorch's rule).
          if (single) return {g};
          // Half types in float32 (y recomputed there too), rounded once, as PyTorch's
          // float32 opmath: their running products and sums overflow long before the
          // gradient does.
          const DType dtype = s[0].dtype();
          if (dtype == DType::Float16 || dtype == DType::BFloat16) {
            const Tensor x = s[0].to(DType::Float32);
            return {cumprod_backward(x, cumprod(x, d), g.to(DType::Float32), d).to(dtype)};
          }
          return {cumprod_backward(s[0], s[1], g, d)};
        });
  return out;
}

// -- sorting ----------------------------------------------------------------------------

std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending) {
  detail::impl_of(x, "sort");
  const int64_t rank = std::max<int64_t>(x.dim(), 1);
  const int64_t d = detail::wrap_dim(dim, rank, "sort");
  Tensor xc = (x.dim() == 0 ? x.reshape({1}) : x).contiguous();
  Tensor values = detail::empty_on(xc, xc.shape(), x.dtype());
  Tensor indices = detail::empty_on(xc, xc.shape(), DType::Int64);
  if (xc.numel() > 0)
    detail::dispatch(detail::attrs::sort{.dim = d, .descending = descending ? 1 : 0},
                     {xc.impl().get()}, {values.impl().get(), indices.impl().get()});
  if (x.dim() == 0) {
    values = values.reshape({});
    indices = indices.reshape({});
  }
  if (ag::needs_grad({&x}))
    ag::record("SortBackward", values, {&x}, {indices},
               [d, shape = x.shape().vec()](const Saved& s, const Tensor& g) -> Grads {
                 // Each output came from exactly one input: send its gradient back there.
                 if (shape.empty()) return {g};
                 Tensor dx = zeros(shape, TensorOptions(g.dtype()).device(g.device()));
                 return {dx.scatter_add(d, s[0], g)};
               });
  return {values, indices};
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending) {
  NoGradGuard no_grad;  // indices only
  return std::get<1>(sort(x, dim, descending));
}

std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest) {
  detail::impl_of(x, "topk");
  const int64_t rank = std::max<int64_t>(x.dim(), 1);
  const int64_t d = detail::wrap_dim(dim, rank, "topk");
  const int64_t size = x.dim() == 0 ? 1 : x.size(d);
  KILN_CHECK(k >= 0 && k <= size, "topk: k = ", k, " is out of range for dimension ", d,
             " of shape ", x.shape(), " (0 <= k <= ", size, ")");
  auto [values, indices] = sort(x, d, largest);
  if (x.dim() == 0) return {values, indices};
  return {values.narrow(d, 0, k), indices.narrow(d, 0, k)};
}

// -- selections -------------------------------------------------------------------------

Tensor nonzero(const Tensor& x) {
  detail::impl_of(x, "nonzero");
  Tensor positions = true_positions(x != 0, "nonzero");
  const int64_t count = positions.size(0);
  const TensorOptions i64 = TensorOptions(DType::Int64).device(x.device());
  if (x.dim() == 0) return zeros({count, 0}, i64);
  // Coordinate d of every element, as a grid of x's shape, picked at the positions.
  std::vector<Tensor> coords;
  for (int64_t d = 0; d < x.dim(); ++d) {
    std::vector<int64_t> along(static_cast<size_t>(x.dim()), 1);
    along[static_cast<size_t>(d)] = x.size(d);
    Tensor grid = arange(x.size(d), i64).reshape(along).expand(x.shape()).reshape({-1});
    coords.push_back(index_select(grid, 0, positions));
  }
  return stack(coords, 1);
}

Tensor argwhere(const Tensor& x) { return nonzero(x); }

std::vector<Tensor> where(const Tensor& condition) {
  detail::impl_of(condition, "where");
  // A 0-d condition counts as [1] (torch.where(tensor(True)) gives (tensor([0]),)).
  return nonzero(condition.dim() == 0 ? condition.reshape({1}) : condition).unbind(1);
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  detail::check_same_device("masked_select", {&x, &mask});
  KILN_CHECK(mask.dtype() == DType::Bool, "masked_select: the mask must be a bool tensor, got ",
             mask.dtype());
  const auto shape = detail::broadcast_shapes(x.shape(), mask.shape(), "masked_select");
  Tensor positions = true_positions(mask.expand(shape), "masked_select");
  return index_select(x.expand(shape).reshape({-1}), 0, positions);
}

Tensor masked_scatter(const Tensor& x, const Tensor& mask, const Tensor& source) {
  detail::check_same_device("masked_scatter", {&x, &mask, &source});
  KILN_CHECK(mask.dtype() == DType::Bool, "masked_scatter: the mask must be a bool tensor, got ",
             mask.dtype());
  KILN_CHECK(source.dtype() == x.dtype(), "masked_scatter: source is ", source.dtype(),
             " where x is ", x.dtype());
  Tensor m = mask.expand(x.shape()).contiguous().reshape({-1});
  const int64_t count = count_true(m, "masked_scatter");
  KILN_CHECK(count <= source.numel(), "masked_scatter: the mask selects ", count,
             " elements but source ", source.shape(), " has ", source.numel());
  if (count == 0) return x.clone();
  // The k-th true position (row-major) takes source's k-th element.
  Tensor slot = where(m, cumsum(m, 0) - int64_t{1}, int64_t{0});
  Tensor taken = index_select(source.reshape({-1}), 0, slot).reshape(x.shape());
  return where(m.reshape(x.shape()), taken, x);
}

UniqueResult unique(const Tensor& x) {
  detail::impl_of(x, "unique");
  NoGradGuard no_grad;  // not differentiable, as torch.unique
  const TensorOptions i64 = TensorOptions(DType::Int64).device(x.device());
  auto [sorted, order] = sort(x.reshape({-1}), 0, false);
  const int64_t n = sorted.numel();
  if (n == 0) return {sorted, zeros(x.shape(), i64), zeros({0}, i64)};
  // A run starts where a value differs from the one before it (NaN differs from all).
  Tensor starts = cat({full({1}, true, TensorOptions(DType::Bool).device(x.device())),
                       sorted.narrow(0, 1, n - 1) != sorted.narrow(0, 0, n - 1)});
  Tensor group = cumsum(starts, 0) - 1;  // each sorted element's output slot
  Tensor values = masked_select(sorted, starts);
  Tensor inverse = zeros({n}, i64).scatter_add(0, order, group).reshape(x.shape());
  Tensor counts = zeros({values.numel()}, i64).index_add(0, group, ones({n}, i64));
  return {values, inverse, counts};
}

Tensor randperm(int64_t n, TensorOptions options) {
  KILN_CHECK(n >= 0, "randperm: n must be >= 0, got ", n);
  const DType dtype = options.has_dtype() ? options.dtype() : DType::Int64;
  KILN_CHECK(is_integral(dtype), "randperm: expects an integer dtype, got ", dtype);
  const int64_t largest = dtype == DType::UInt8   ? 255
                          : dtype == DType::Int32 ? INT32_MAX
                                                  : INT64_MAX;
  KILN_CHECK(n - 1 <= largest, "randperm: ", n, " positions do not fit ", dtype);
  Tensor draws =
      uniform({n}, 0.0, 1.0, TensorOptions(options).dtype(DType::Float64).requires_grad(false));
  return argsort(draws, 0).to(dtype);
}

Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement) {
  KILN_CHECK(probs.defined(), "multinomial: probs is undefined");
  KILN_CHECK(probs.dim() == 1 || probs.dim() == 2,
             "multinomial: probs must be 1-D (one distribution) or 2-D (one per row), got ",
             probs.dim(), "-D");
  KILN_CHECK(is_floating(probs.dtype()), "multinomial: probs must be a float tensor, got ",
             probs.dtype());
  const int64_t categories = probs.size(-1);
  KILN_CHECK(categories > 0, "multinomial: probs has no categories");
  KILN_CHECK(num_samples > 0, "multinomial: num_samples must be positive, got ", num_samples);
  KILN_CHECK(replacement || num_samples <= categories, "multinomial: cannot draw ", num_samples,
             " samples from ", categories, " categories without replacement");
  // One distribution per row, in float64, outside autograd. The weights are checked as
  // PyTorch checks them, before anything is drawn (this reads a few scalars back).
  const Tensor w = (probs.dim() == 1 ? probs.unsqueeze(0) : probs).detach().to(DType::Float64);
  const int64_t rows = w.size(0);
  if (rows == 0) return zeros({0, num_samples}, TensorOptions(DType::Int64).device(probs.device()));
  KILN_CHECK(all(isfinite(w)).item<bool>() && !any(w < 0.0).item<bool>(),
             "multinomial: probs holds inf, NaN or a negative weight");
  KILN_CHECK(!any(sum(w, {1}) <= 0.0).item<bool>(),
             "multinomial: a distribution's weights sum to 0 (each needs a positive weight)");
  const TensorOptions f64 = TensorOptions(DType::Float64).device(probs.device());
  Tensor samples;
  if (replacement) {
    // Inverse CDF: a uniform u in [0, 1) picks the number of cumulative weights at or
    // below it. Dividing by the row's last cumulative weight makes that entry exactly
    // 1, so u never passes it and a category of weight 0 is never picked.
    Tensor cdf = cumsum(w, 1);
    cdf = (cdf / cdf.narrow(1, categories - 1, 1)).unsqueeze(1);  // [rows, 1, categories]
    // The comparison is [rows, samples, categories]: drawn in chunks of at most 2^24
    // elements, so memory stays bounded for many samples.
    const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 24) / (rows * categories));
    std::vector<Tensor> parts;
    for (int64_t start = 0; start < num_samples; start += chunk) {
      const int64_t n = std::min(chunk, num_samples - start);
      Tensor u = rand({rows, n, 1}, f64);
      parts.push_back(sum(cdf <= u, {2}));
    }
    samples = parts.size() == 1 ? parts[0] : cat(parts, 1);
  } else {
    KILN_CHECK(amin(sum(w > 0.0, {1})).item<int64_t>() >= num_samples,
               "multinomial: a distribution has fewer categories of non-zero weight than the ",
               num_samples, " samples drawn without replacement");
    // Exponential races (Efraimidis and Spirakis): category i finishes at e_i / w_i with
    // e_i exponential; the order of finishing is a draw without replacement in
    // proportion to the weights. Weight 0 never finishes.
    Tensor e = -log(1.0 - rand({rows, categories}, f64));  // exponential, in [0, inf)
    Tensor finish = where(w > 0.0, e / w, std::numeric_limits<double>::infinity());
    samples = argsort(finish, 1).narrow(1, 0, num_samples);
  }
  samples = samples.to(DType::Int64);
  return probs.dim() == 1 ? samples.squeeze(0) : samples;
}

// -- methods --------------------------------------------------------------------------------

Tensor Tensor::cumsum(int64_t dim) const { return kiln::cumsum(*this, dim); }
Tensor Tensor::cumprod(int64_t dim) const { return kiln::cumprod(*this, dim); }
std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const {
  return kiln::sort(*this, dim, descending);
}
Tensor Tensor::argsort(int64_t dim, bool descending) const {
  return kiln::argsort(*this, dim, descending);
}
std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest) const {
  return kiln::topk(*this, k, dim, largest);
}
Tensor Tensor::nonzero() const { return kiln::nonzero(*this); }
Tensor Tensor::masked_select(const Tensor& mask) const { return kiln::masked_select(*this, mask); }
Tensor Tensor::masked_scatter(const Tensor& mask, const Tensor& source) const {
  return kiln::masked_scatter(*this, mask, source);
}
Tensor& Tensor::masked_scatter_(const Tensor& mask, const Tensor& source) {
  detail::impl_of(*this, "masked_scatter_");
  return copy_(kiln::masked_scatter(*this, mask, source));
}

Tensor sample_logits(const Tensor& logits, double temperature, int64_t top_k, double top_p) {
  KILN_CHECK(logits.defined(), "sample_logits: logits is undefined");
  KILN_CHECK(logits.dim() == 1 || logits.dim() == 2,
             "sample_logits: logits must be [vocab] or [rows, vocab], got shape ", logits.shape());
  KILN_CHECK(is_floating(logits.dtype()), "sample_logits: logits must be floating-point, got ",
             logits.dtype());
  KILN_CHECK(temperature >= 0 && std::isfinite(temperature),
             "sample_logits: temperature must be finite and >= 0, got ", temperature);
  KILN_CHECK(top_k >= 0, "sample_logits: top_k must be >= 0 (0: every token), got ", top_k);
  KILN_CHECK(top_p > 0 && top_p <= 1, "sample_logits: top_p must be in (0, 1], got ", top_p);
  NoGradGuard no_grad;
  const bool one_row = logits.dim() == 1;
  Tensor x = one_row ? logits.unsqueeze(0) : logits;
  if (x.dtype() != DType::Float64) x = x.to(DType::Float32);
  const int64_t vocab = x.size(1);
  KILN_CHECK(vocab > 0, "sample_logits: the vocabulary is empty");
  Tensor token;
  if (temperature == 0) {
    token = x.argmax(1, true);
  } else {
    // Most likely first; weights relative to the largest (multinomial normalizes).
    auto [sorted, order] = sort(x / temperature, 1, true);
    Tensor weights = exp(sorted - sorted.narrow(1, 0, 1));
    const auto positions = TensorOptions(DType::Int64).device(x.device());
    if (top_k > 0 && top_k < vocab)
      weights = weights.masked_fill(arange(vocab, positions) >= top_k, 0.0);
    if (top_p < 1) {
      // Keep a token while the probability before it is below top_p: the first always.
      const Tensor probs = weights / weights.sum({1}, true);
      weights = weights.masked_fill(cumsum(probs, 1) - probs >= top_p, 0.0);
    }
    token = gather(order, 1, multinomial(weights, 1, true));
  }
  return one_row ? token.view({1}) : token;
}

}  // namespace kiln
