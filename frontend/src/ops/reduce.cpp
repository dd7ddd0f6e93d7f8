// Reductions. The kernels see the catalogue's same-rank form (reduced dims of size
// 1 in the output); keepdim=false is a view that drops them afterwards.

#include <algorithm>
#include <limits>
#include <vector>

#include "autograd/record.h"
#include "dispatch/autocast.h"
#include "kiln/autograd.h"
#include "kiln/ops.h"
#include "ops/common.h"
#include "ops/complex.h"

namespace kiln {

using detail::OpId;
using detail::SmallDims;
namespace ag = detail::autograd_impl;
using Grads = std::vector<Tensor>;
using Saved = std::vector<Tensor>;

namespace {

enum class Accum {
  Sum,       // bool and small ints are summed as int64 (as PyTorch)
  Floating,  // float dtypes only
  Same,      // any dtype but bool
};

struct Reduced {
  SmallDims keep_shape;  // reduced dims set to 1
  SmallDims out_shape;   // what the caller sees
  bool empty_reduction = false;
};

Reduced reduced_shapes(const detail::TensorImpl& x, IntArrayRef dims, bool keepdim,
                       const char* op) {
  std::vector<bool> reduce(static_cast<size_t>(x.dim()), dims.empty());
  for (int64_t d : dims) {
    int64_t w = detail::wrap_dim(d, x.dim(), op);
    if (x.dim() == 0) continue;
    KILN_CHECK(!reduce[w] || dims.empty(), op, ": dimension ", d, " appears twice in ", dims);
    reduce[w] = true;
  }
  Reduced r;
  for (int64_t i = 0; i < x.dim(); ++i) {
    int64_t n = x.shape[i];
    if (reduce[i]) {
      r.empty_reduction |= n == 0;
      r.keep_shape.push_back(1);
      if (keepdim) r.out_shape.push_back(1);
    } else {
      r.keep_shape.push_back(n);
      r.out_shape.push_back(n);
    }
  }
  if (x.dim() == 0) r.empty_reduction = false;
  return r;
}

// The dims to reduce over in backward: every dim of size 1 in `keep`. A dim of size 1
// in `x` may or may not have been reduced; summing over it changes nothing, while
// leaving it out could leave the list empty, which sum() reads as "every dim".
std::vector<int64_t> reduced_dims(IntArrayRef keep) {
  std::vector<int64_t> dims;
  for (size_t i = 0; i < keep.size(); ++i)
    if (keep[i] == 1) dims.push_back(static_cast<int64_t>(i));
  return dims;
}

// For each element, the product of the other elements of its slice over `dims` (sorted),
// from cumulative products taken from both ends: PyTorch's prod_safe_zeros_backward,
// with the reduced dims moved last and flattened into one.
Tensor product_of_others(const Tensor& x, const std::vector<int64_t>& dims) {
  std::vector<int64_t> order, moved_shape, kept_shape;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) order.push_back(d);
  for (int64_t d : dims) order.push_back(d);
  int64_t line = 1;
  for (int64_t d : order) moved_shape.push_back(x.size(d));
  for (int64_t d : dims) line *= x.size(d);
  kept_shape.assign(moved_shape.begin(), moved_shape.end() - static_cast<int64_t>(dims.size()));
  kept_shape.push_back(line);
  const int64_t last = static_cast<int64_t>(kept_shape.size()) - 1;
  Tensor lines = x.permute(order).reshape(kept_shape);
  auto one_shape = kept_shape;
  one_shape.back() = 1;
  Tensor one = ones(one_shape, TensorOptions(x.dtype()).device(x.device()));
  Tensor before = cumprod(cat({one, lines.narrow(last, 0, line - 1)}, last), last);
  Tensor after =
      flip(cumprod(cat({one, flip(lines.narrow(last, 1, line - 1), {last})}, last), last), {last});
  std::vector<int64_t> inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i) inverse[static_cast<size_t>(order[i])] = int64_t(i);
  return (before * after).reshape(moved_shape).permute(inverse);
}

bool is_half(DType dtype) { return dtype == DType::Float16 || dtype == DType::BFloat16; }

// d/dx_i of prod over `dims` (sorted) = the product of the others, times g (y's keepdim
// shape), as PyTorch 1.13's prod_backward: g·y / x when x holds no zero at all, else
// every slice's products of the others, without dividing (and 0 for prod() of every dim,
// no dims given, with two or more zeros).
Tensor prod_slices_backward(const Tensor& g, const Tensor& x, const Tensor& y,
                            const std::vector<int64_t>& dims, bool every_dim) {
  const auto zeros = (x == 0).sum().item<int64_t>();
  if (zeros == 0) return g * (y / x);
  // PyTorch's prod() of everything answers 0 outright for two zeros.
  if (zeros > 1 && every_dim) return zeros_like(x);
  return g * product_of_others(x, dims);
}

// The gradient of prod(x, dims) for g (keepdim shape `keep`); `y` is the result when it
// is x's dtype's own, else undefined. Half types compute in float32 and round once, as
// PyTorch's float32 opmath: their running products overflow (the products of the others
// of a float16 slice reach 65504 long before the gradient does).
Tensor prod_backward(const Tensor& g, const Tensor& x, Tensor y, const std::vector<int64_t>& dims,
                     bool every_dim, IntArrayRef keep) {
  if (x.dim() == 0 || x.numel() == 0) return g.reshape(keep).expand(x.shape());
  if (is_half(x.dtype()))
    return prod_backward(g.to(DType::Float32), x.to(DType::Float32), Tensor(), dims, every_dim,
                         keep)
        .to(x.dtype());
  Tensor gk = g.reshape(keep);
  if (every_dim || dims.size() == 1) {
    if (!y.defined()) y = prod(x, every_dim ? std::vector<int64_t>{} : dims, true).reshape(keep);
    std::vector<int64_t> all = dims;
    if (every_dim)
      for (int64_t d = 0; d < x.dim(); ++d) all.push_back(d);
    return prod_slices_backward(gk.expand(x.shape()), x, y, all, every_dim);
  }
  // PyTorch 1.13's prod takes one dim, so several dims are one prod after another, from
  // the last dim down; the gradient goes back through each, each with its own zeros rule
  // (an infinite partial product meets itself in y / x there, giving NaN).
  std::vector<Tensor> stages{x};
  for (auto d = dims.rbegin(); d != dims.rend(); ++d)
    stages.push_back(prod(stages.back(), {*d}, true));
  for (size_t i = dims.size(); i-- > 0;) {
    const Tensor& in = stages[i];
    gk = prod_slices_backward(gk.expand(in.shape()), in, stages[i + 1], {dims[dims.size() - 1 - i]},
                              false);
  }
  return gk;
}

// Records prod's gradient; dims as given (wrapped, not sorted), empty for every dim.
void record_prod(Tensor& result, const Tensor& x, const Tensor& keep_out, IntArrayRef keep_shape,
                 IntArrayRef dims) {
  std::vector<int64_t> sorted;
  for (int64_t d : dims) sorted.push_back(x.dim() == 0 ? 0 : detail::wrap_dim(d, x.dim(), "prod"));
  std::sort(sorted.begin(), sorted.end());
  const bool every_dim = dims.empty();
  ag::record(
      "ProdBackward", result, {&x}, {x, keep_out},
      [sorted, every_dim, keep = keep_shape.vec()](const Saved& s, const Tensor& g) -> Grads {
        return {prod_backward(g, s[0], s[1], sorted, every_dim, keep)};
      });
}

void record_reduction(OpId op, Tensor& result, const Tensor& x, const Tensor& keep_out,
                      IntArrayRef keep_shape, int64_t correction, bool every_dim) {
  auto xs = x.shape().vec();
  auto ks = keep_shape.vec();
  auto dims = reduced_dims(ks);
  int64_t count = 1;
  for (int64_t d : dims) count *= xs[static_cast<size_t>(d)];
  // The incoming gradient, broadcast back over the reduced dims.
  auto spread = [xs, ks](const Tensor& g) { return g.reshape(ks).expand(xs); };
  switch (op) {
    case OpId::sum:
      ag::record("SumBackward", result, {&x}, {},
                 [spread](const Saved&, const Tensor& g) -> Grads { return {spread(g)}; });
      break;
    case OpId::mean:
      ag::record("MeanBackward", result, {&x}, {},
                 [spread, count](const Saved&, const Tensor& g) -> Grads {
                   return {spread(g) / static_cast<double>(std::max<int64_t>(count, 1))};
                 });
      break;
    case OpId::amax:
    case OpId::amin:
      // Ties share the gradient evenly (PyTorch's amax/amin rule); a slice whose
      // result is NaN has no matching element and gets NaN, as in PyTorch.
      ag::record(op == OpId::amax ? "AmaxBackward" : "AminBackward", result, {&x}, {x, keep_out},
                 [spread, dims](const Saved& s, const Tensor& g) -> Grads {
                   Tensor hit = (s[0] == s[1]).to(g.dtype());
                   Tensor share = hit / hit.sum(dims, true);
                   return {spread(g) * share};
                 });
      break;
    case OpId::var:
      // PyTorch 1.13's var_backward, for a 0-d input or no dims, answers grad · 2/0 =
      // ±inf when N − correction is 0 (NaN only where grad is 0), without the x − mean
      // factor that would make it NaN; with dims it keeps the factor (inf · 0 = NaN).
      if ((x.dim() == 0 || every_dim) && count == correction && count == 1) {
        ag::record("VarBackward", result, {&x}, {},
                   [spread](const Saved&, const Tensor& g) -> Grads {
                     return {spread(g) * std::numeric_limits<double>::infinity()};
                   });
        break;
      }
      ag::record("VarBackward", result, {&x}, {x},
                 [spread, dims, count, correction](const Saved& s, const Tensor& g) -> Grads {
                   Tensor centered = s[0] - s[0].mean(dims, true);
                   return {spread(g) * centered * (2.0 / static_cast<double>(count - correction))};
                 });
      break;
    default:
      break;
  }
}

Tensor reduce(OpId op, const char* name, const Tensor& x, IntArrayRef dims, bool keepdim,
              Accum accum, int64_t correction = 0) {
  if (detail::autocast_on) {
    Tensor xc = x;
    if (detail::autocast_inputs(op, {&xc}))
      return reduce(op, name, xc, dims, keepdim, accum, correction);
  }
  const auto& impl = detail::impl_of(x, name);
  if (is_complex(impl.dtype)) [[unlikely]] {
    KILN_CHECK(op == OpId::sum || op == OpId::mean, name, ": not supported for complex tensors (",
               impl.dtype, ")");
    return detail::complex_reduce(op, x, dims, keepdim);
  }
  DType dtype = impl.dtype;
  if (accum == Accum::Sum &&
      (dtype == DType::Bool || dtype == DType::UInt8 || dtype == DType::Int32))
    dtype = DType::Int64;
  if (accum == Accum::Floating)
    KILN_CHECK(is_floating(dtype), name, ": expected a floating-point tensor, got ", dtype,
               " (convert with .to(kiln::float32))");
  if (accum == Accum::Same && dtype == DType::Bool) {
    // No bool kernels: the max of bools is an any, the min an all (PyTorch's answers).
    KILN_CHECK(op == OpId::amax || op == OpId::amin, name, ": not supported for bool tensors");
    return reduce(op, name, x.to(DType::UInt8), dims, keepdim, accum) != int64_t{0};
  }
  Reduced r = reduced_shapes(impl, dims, keepdim, name);
  if (accum == Accum::Same)
    KILN_CHECK(!r.empty_reduction, name, ": cannot reduce over a dimension of size 0 in shape ",
               x.shape(), " (the result has no identity)");
  Tensor in = detail::cast(x, dtype);
  Tensor out = detail::empty_on(x, r.keep_shape, dtype);
  if (op == OpId::var)
    detail::dispatch(detail::attrs::var{.correction = correction}, {in.impl().get()},
                     {out.impl().get()});
  else
    detail::dispatch(op, {in.impl().get()}, {out.impl().get()});
  Tensor result = keepdim ? out : out.view(r.out_shape);
  if (ag::needs_grad({&x})) {
    if (op == OpId::prod)
      record_prod(result, x, out, r.keep_shape, dims);
    else
      record_reduction(op, result, x, out, r.keep_shape, correction, dims.empty());
  }
  return result;
}

Tensor arg_reduce(OpId op, const char* name, const Tensor& x, std::optional<int64_t> dim,
                  bool keepdim) {
  const auto& impl = detail::impl_of(x, name);
  KILN_CHECK(impl.dtype != DType::Bool, name, ": not supported for bool tensors");
  NoGradGuard no_grad;  // indices are not differentiable
  Tensor src = x;
  int64_t d = 0;
  if (!dim) {
    src = x.reshape({-1});
  } else {
    d = detail::wrap_dim(*dim, impl.dim(), name);
    if (impl.dim() == 0) src = x.reshape({1});
  }
  KILN_CHECK(src.size(d) > 0, name, ": cannot take the ", name, " of an empty dimension (shape ",
             x.shape(), ")");
  SmallDims keep(src.shape().begin(), src.shape().end());
  keep[d] = 1;
  Tensor out = detail::empty_on(x, keep, DType::Int64);
  detail::dispatch(op, {src.impl().get()}, {out.impl().get()});
  if (!dim) {
    if (!keepdim) return out.view({});
    SmallDims ones(static_cast<size_t>(impl.dim()), 1);
    return out.view(ones);
  }
  if (keepdim) return impl.dim() == 0 ? out.view({}) : out;
  return impl.dim() == 0 ? out.view({}) : out.squeeze(d);
}

// max()/min() over every element. Unlike amax/amin, a NaN result sends the
// gradient to the NaN elements (ties, NaN or not, share it evenly): PyTorch's rule.
Tensor extreme_of_all(OpId op, const Tensor& x) {
  const char* name = op == OpId::amax ? "max" : "min";
  Tensor result;
  {
    NoGradGuard no_grad;  // recorded below with its own rule
    result = reduce(op, name, x, {}, false, Accum::Same);
  }
  if (ag::needs_grad({&x}))
    ag::record(op == OpId::amax ? "MaxBackward" : "MinBackward", result, {&x}, {x, result},
               [](const Saved& s, const Tensor& g) -> Grads {
                 Tensor hit = logical_or(s[0] == s[1], logical_and(isnan(s[0]), isnan(s[1])));
                 Tensor hitf = hit.to(g.dtype());
                 return {hitf * (g / hitf.sum())};
               });
  return result;
}

// max(dim)/min(dim): the values are the elements at the returned indices, so the
// gradient goes to that one element even among ties (PyTorch's rule).
std::tuple<Tensor, Tensor> extreme_along(OpId op, const Tensor& x, int64_t dim, bool keepdim) {
  const char* name = op == OpId::amax ? "max" : "min";
  const auto& impl = detail::impl_of(x, name);
  if (impl.dtype == DType::Bool) {  // through uint8: there are no bool kernels
    auto [values, index] = extreme_along(op, x.to(DType::UInt8), dim, keepdim);
    return {values.to(DType::Bool), index};
  }
  if (impl.dim() == 0)  // one element: nothing to choose between, even a NaN takes the gradient
    return {x.clone(),  // arg_reduce checks dim
            arg_reduce(op == OpId::amax ? OpId::argmax : OpId::argmin, name, x, dim, keepdim)};
  Tensor index =
      arg_reduce(op == OpId::amax ? OpId::argmax : OpId::argmin, name, x, dim, /*keepdim=*/true);
  int64_t d = detail::wrap_dim(dim, impl.dim(), name);
  Tensor values = gather(x, d, index);
  if (keepdim) return {values, index};
  return {values.squeeze(d), index.squeeze(d)};
}

}  // namespace

Tensor sum(const Tensor& x, IntArrayRef dims, bool keepdim) {
  return reduce(OpId::sum, "sum", x, dims, keepdim, Accum::Sum);
}
Tensor prod(const Tensor& x, IntArrayRef dims, bool keepdim) {
  return reduce(OpId::prod, "prod", x, dims, keepdim, Accum::Sum);
}
Tensor mean(const Tensor& x, IntArrayRef dims, bool keepdim) {
  return reduce(OpId::mean, "mean", x, dims, keepdim, Accum::Floating);
}
Tensor amax(const Tensor& x, IntArrayRef dims, bool keepdim) {
  return reduce(OpId::amax, "max", x, dims, keepdim, Accum::Same);
}
Tensor amin(const Tensor& x, IntArrayRef dims, bool keepdim) {
  return reduce(OpId::amin, "min", x, dims, keepdim, Accum::Same);
}
Tensor var(const Tensor& x, IntArrayRef dims, int64_t correction, bool keepdim) {
  KILN_CHECK(correction >= 0, "var: correction must be non-negative, got ", correction);
  if (correction > 0) {
    const auto& impl = detail::impl_of(x, "var");
    int64_t count = 1;
    if (dims.empty() || impl.dim() == 0)
      count = impl.numel;
    else
      for (int64_t d : dims) count *= impl.shape[detail::wrap_dim(d, impl.dim(), "var")];
    if (count > 0 && count <= correction) {
      // PyTorch divides the sum of squares by max(0, N - correction): inf, or NaN for
      // a zero sum. Its gradient keeps 2 / (N - correction) (VarBackward, recorded by
      // reduce()), so only the values are replaced, in place and unrecorded.
      Tensor result = reduce(OpId::var, "var", x, dims, keepdim, Accum::Floating, correction);
      NoGradGuard no_grad;
      // The sum of squares in float64 (PyTorch accumulates in double): a float32 one
      // of tiny values underflows to 0 and would give NaN where PyTorch gives inf.
      const Tensor wide = x.to(DType::Float64);
      Tensor value = (reduce(OpId::var, "var", wide, dims, keepdim, Accum::Floating, 0) *
                      std::numeric_limits<double>::infinity())
                         .to(result.dtype());
      detail::dispatch(OpId::copy, {value.impl().get()}, {result.impl().get()});
      return result;
    }
  }
  return reduce(OpId::var, "var", x, dims, keepdim, Accum::Floating, correction);
}
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_reduce(OpId::argmax, "argmax", x, dim, keepdim);
}
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_reduce(OpId::argmin, "argmin", x, dim, keepdim);
}

Tensor Tensor::sum(IntArrayRef dims, bool keepdim) const { return kiln::sum(*this, dims, keepdim); }
Tensor Tensor::mean(IntArrayRef dims, bool keepdim) const {
  return kiln::mean(*this, dims, keepdim);
}
Tensor Tensor::prod(IntArrayRef dims, bool keepdim) const {
  return kiln::prod(*this, dims, keepdim);
}
Tensor Tensor::amax(IntArrayRef dims, bool keepdim) const {
  return kiln::amax(*this, dims, keepdim);
}
Tensor Tensor::amin(IntArrayRef dims, bool keepdim) const {
  return kiln::amin(*this, dims, keepdim);
}
Tensor Tensor::max() const { return extreme_of_all(OpId::amax, *this); }
Tensor Tensor::min() const { return extreme_of_all(OpId::amin, *this); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const {
  return extreme_along(OpId::amax, *this, dim, keepdim);
}
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const {
  return extreme_along(OpId::amin, *this, dim, keepdim);
}
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const {
  return kiln::argmax(*this, dim, keepdim);
}
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const {
  return kiln::argmin(*this, dim, keepdim);
}
Tensor Tensor::var(IntArrayRef dims, int64_t correction, bool keepdim) const {
  return kiln::var(*this, dims, correction, keepdim);
}

}  // namespace kiln
