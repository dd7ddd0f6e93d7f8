// Tensor's views and copies: reshape, view, flatten, transpose, permute, slicing,
// squeeze/unsqueeze, expand, contiguous and clone. Views never touch device memory:
// they build new shape/stride/offset metadata over the same Storage, and each one is
// recorded for autograd.

#include <algorithm>
#include <numeric>

#include "autograd/record.h"
#include "core/tensor_impl.h"
#include "kiln/error.h"
#include "kiln/ops.h"
#include "ops/common.h"

namespace kiln {

using detail::impl_of;
using detail::SmallDims;
using detail::wrap_dim;
namespace ag = detail::autograd_impl;

namespace {
// Returns the view `out` of `in`, recorded with backward `bw(grad)` when `in`
// requires grad.
template <typename F>
Tensor recorded(const char* name, const Tensor& in, Tensor out, F bw) {
  if (ag::needs_grad({&in}))
    ag::record(name, out, {&in}, {},
               [bw = std::move(bw)](const std::vector<Tensor>&,
                                    const Tensor& g) -> std::vector<Tensor> { return {bw(g)}; });
  return out;
}

// Gradient of a view that picks part of its input: zeros with the picked part set.
template <typename Pick>
auto scatter_back(const Tensor& in, Pick pick) {
  return
      [shape = in.shape().vec(), dtype = in.dtype(), device = in.device(), pick](const Tensor& g) {
        Tensor z = zeros(shape, TensorOptions(dtype).device(device));
        pick(z).copy_(g);
        return z;
      };
}
}  // namespace

// -- reshape and view ---------------------------------------------------------------

namespace {

SmallDims infer_shape(IntArrayRef shape, int64_t numel, const char* op) {
  SmallDims out(shape.begin(), shape.end());
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      KILN_CHECK(infer < 0, op, ": only one dimension can be -1, got ", shape);
      infer = static_cast<int>(i);
    } else {
      KILN_CHECK(out[i] >= 0, op, ": invalid size ", out[i], " in shape ", shape);
      known *= out[i];
    }
  }
  if (infer >= 0) {
    KILN_CHECK(known != 0 && numel % known == 0, op, ": shape ", shape,
               " is invalid for a tensor of ", numel, " elements");
    out[static_cast<size_t>(infer)] = numel / known;
  } else {
    KILN_CHECK(known == numel, op, ": shape ", shape, " is invalid for a tensor of ", numel,
               " elements");
  }
  return out;
}

// Strides for viewing (shape, strides) as new_shape without copying, if possible.
// Walks the old dims from the innermost, grouping them into chunks that are
// contiguous with one another; each chunk must be covered exactly by a run of new
// dims, which then get strides based on the chunk's innermost stride.
bool view_strides(IntArrayRef shape, IntArrayRef strides, IntArrayRef new_shape, SmallDims& out) {
  out.assign(new_shape.size(), 0);
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  if (numel == 0 || shape.empty()) {
    out = detail::contiguous_strides(new_shape);
    return true;
  }
  int64_t view_d = static_cast<int64_t>(new_shape.size()) - 1;
  int64_t chunk_base_stride = strides[shape.size() - 1];
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= shape[d];
    bool chunk_ends =
        d == 0 || (shape[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
      out[view_d] = view_numel * chunk_base_stride;
      view_numel *= new_shape[view_d];
      --view_d;
    }
    if (view_numel != tensor_numel) return false;
    if (d > 0) {
      chunk_base_stride = strides[d - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  return view_d == -1;
}

}  // namespace

Tensor Tensor::view(IntArrayRef shape) const {
  const auto& impl = impl_of(*this, "view");
  SmallDims new_shape = infer_shape(shape, impl.numel, "view");
  SmallDims strides;
  KILN_CHECK(view_strides(this->shape(), this->strides(), new_shape, strides), "view: shape ",
             this->shape(), " with strides ", this->strides(), " cannot be viewed as ",
             IntArrayRef(new_shape), " without a copy; use reshape() (which copies when it must)");
  return recorded("ViewBackward", *this, detail::make_view(*this, new_shape, strides, impl.offset),
                  [s = this->shape().vec()](const Tensor& g) { return g.reshape(s); });
}

Tensor Tensor::reshape(IntArrayRef shape) const {
  const auto& impl = impl_of(*this, "reshape");
  SmallDims new_shape = infer_shape(shape, impl.numel, "reshape");
  SmallDims strides;
  if (view_strides(this->shape(), this->strides(), new_shape, strides))
    return recorded("ReshapeBackward", *this,
                    detail::make_view(*this, new_shape, strides, impl.offset),
                    [s = this->shape().vec()](const Tensor& g) { return g.reshape(s); });
  return contiguous().view(new_shape);
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  const auto& impl = impl_of(*this, "flatten");
  if (impl.dim() == 0) return reshape({1});
  int64_t s = wrap_dim(start_dim, impl.dim(), "flatten");
  int64_t e = wrap_dim(end_dim, impl.dim(), "flatten");
  KILN_CHECK(s <= e, "flatten: start_dim ", start_dim, " comes after end_dim ", end_dim);
  SmallDims shape;
  for (int64_t i = 0; i < s; ++i) shape.push_back(impl.shape[i]);
  int64_t merged = 1;
  for (int64_t i = s; i <= e; ++i) merged *= impl.shape[i];
  shape.push_back(merged);
  for (int64_t i = e + 1; i < impl.dim(); ++i) shape.push_back(impl.shape[i]);
  return reshape(shape);
}

// -- dimension permutations ----------------------------------------------------------

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  const auto& impl = impl_of(*this, "transpose");
  if (impl.dim() == 0) return *this;
  d0 = wrap_dim(d0, impl.dim(), "transpose");
  d1 = wrap_dim(d1, impl.dim(), "transpose");
  SmallDims shape = impl.shape, strides = impl.strides;
  std::swap(shape[d0], shape[d1]);
  std::swap(strides[d0], strides[d1]);
  return recorded("TransposeBackward", *this, detail::make_view(*this, shape, strides, impl.offset),
                  [d0, d1](const Tensor& g) { return g.transpose(d0, d1); });
}

Tensor Tensor::t() const {
  const auto& impl = impl_of(*this, "t");
  KILN_CHECK(impl.dim() <= 2, "t: expected a tensor with at most 2 dimensions, got ", impl.dim(),
             "-D (use transpose(dim0, dim1))");
  return impl.dim() < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::permute(IntArrayRef dims) const {
  const auto& impl = impl_of(*this, "permute");
  KILN_CHECK(static_cast<int64_t>(dims.size()) == impl.dim(), "permute: got ", dims.size(),
             " dims ", dims, " for a ", impl.dim(), "-D tensor");
  SmallDims shape(dims.size()), strides(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim(dims[i], impl.dim(), "permute");
    KILN_CHECK(!seen[d], "permute: dimension ", d, " appears twice in ", dims);
    seen[d] = true;
    shape[i] = impl.shape[d];
    strides[i] = impl.strides[d];
  }
  std::vector<int64_t> inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    inverse[static_cast<size_t>(wrap_dim(dims[i], impl.dim(), "permute"))] =
        static_cast<int64_t>(i);
  return recorded("PermuteBackward", *this, detail::make_view(*this, shape, strides, impl.offset),
                  [inverse](const Tensor& g) { return g.permute(inverse); });
}

// -- slicing ---------------------------------------------------------------------------

Tensor Tensor::slice(int64_t dim, int64_t start, int64_t end, int64_t step) const {
  const auto& impl = impl_of(*this, "slice");
  KILN_CHECK(impl.dim() > 0, "slice: cannot slice a 0-d tensor");
  dim = wrap_dim(dim, impl.dim(), "slice");
  KILN_CHECK(step > 0, "slice: step must be positive, got ", step);
  int64_t n = impl.shape[dim];
  // No intermediate overflows, whatever the int64 arguments (INT64_MIN, a step of
  // INT64_MAX): Python's slice rules.
  auto clampi = [n](int64_t i) { return i < 0 ? (i < -n ? 0 : i + n) : std::min(i, n); };
  start = clampi(start);
  end = std::max(clampi(end), start);
  SmallDims shape = impl.shape, strides = impl.strides;
  shape[dim] = end == start ? 0 : (end - start - 1) / step + 1;
  if (shape[dim] > 1) strides[dim] *= step;  // step < n here: the product is in range
  return recorded(
      "SliceBackward", *this,
      detail::make_view(*this, shape, strides, impl.offset + start * impl.strides[dim]),
      scatter_back(*this, [=](const Tensor& z) { return z.slice(dim, start, end, step); }));
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const {
  const auto& impl = impl_of(*this, "chunk");
  KILN_CHECK(impl.dim() > 0, "chunk: cannot split a 0-d tensor");
  KILN_CHECK(chunks > 0, "chunk: the number of chunks must be positive, got ", chunks);
  dim = wrap_dim(dim, impl.dim(), "chunk");
  const int64_t n = impl.shape[dim];
  if (n == 0) return std::vector<Tensor>(static_cast<size_t>(chunks), narrow(dim, 0, 0));
  return split(n / chunks + (n % chunks != 0), dim);
}

std::vector<Tensor> Tensor::split(int64_t size, int64_t dim) const {
  const auto& impl = impl_of(*this, "split");
  KILN_CHECK(impl.dim() > 0, "split: cannot split a 0-d tensor");
  dim = wrap_dim(dim, impl.dim(), "split");
  const int64_t n = impl.shape[dim];
  KILN_CHECK(size > 0 || (size == 0 && n == 0), "split: the piece size must be positive, got ",
             size);
  if (n == 0) return {narrow(dim, 0, 0)};
  std::vector<Tensor> pieces;
  for (int64_t start = 0; start < n; start += size)
    pieces.push_back(narrow(dim, start, std::min(size, n - start)));
  return pieces;
}

std::vector<Tensor> Tensor::split(const std::vector<int64_t>& sizes, int64_t dim) const {
  const auto& impl = impl_of(*this, "split");
  KILN_CHECK(impl.dim() > 0, "split: cannot split a 0-d tensor");
  dim = wrap_dim(dim, impl.dim(), "split");
  const int64_t n = impl.shape[dim];
  int64_t total = 0;
  for (int64_t s : sizes) {
    KILN_CHECK(s >= 0, "split: piece lengths must be non-negative, got ", s);
    total += s;
    KILN_CHECK(total <= n, "split: the lengths add up to more than dimension ", dim, "'s size ", n);
  }
  KILN_CHECK(total == n, "split: the lengths add up to ", total, ", not to dimension ", dim,
             "'s size ", n);
  std::vector<Tensor> pieces;
  int64_t start = 0;
  for (int64_t s : sizes) {
    pieces.push_back(narrow(dim, start, s));
    start += s;
  }
  return pieces;
}

std::vector<Tensor> Tensor::unbind(int64_t dim) const {
  const auto& impl = impl_of(*this, "unbind");
  KILN_CHECK(impl.dim() > 0, "unbind: cannot unbind a 0-d tensor");
  dim = wrap_dim(dim, impl.dim(), "unbind");
  std::vector<Tensor> out;
  for (int64_t i = 0; i < impl.shape[dim]; ++i) out.push_back(select(dim, i));
  return out;
}

Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  const auto& impl = impl_of(*this, "narrow");
  KILN_CHECK(impl.dim() > 0, "narrow: cannot narrow a 0-d tensor");
  dim = wrap_dim(dim, impl.dim(), "narrow");
  int64_t n = impl.shape[dim];
  if (start < 0) start += n;
  KILN_CHECK(start >= 0 && length >= 0 && start + length <= n, "narrow: range [", start, ", ",
             start + length, ") is out of bounds for dimension ", dim, " of size ", n);
  SmallDims shape = impl.shape;
  shape[dim] = length;
  return recorded(
      "NarrowBackward", *this,
      detail::make_view(*this, shape, impl.strides, impl.offset + start * impl.strides[dim]),
      scatter_back(*this, [=](const Tensor& z) { return z.narrow(dim, start, length); }));
}

Tensor Tensor::select(int64_t dim, int64_t index) const {
  const auto& impl = impl_of(*this, "select");
  KILN_CHECK(impl.dim() > 0, "select: cannot select from a 0-d tensor");
  dim = wrap_dim(dim, impl.dim(), "select");
  int64_t n = impl.shape[dim];
  KILN_CHECK(index >= -n && index < n, "select: index ", index, " is out of range for dimension ",
             dim, " of size ", n);
  if (index < 0) index += n;
  SmallDims shape = impl.shape, strides = impl.strides;
  shape.erase(shape.begin() + dim);
  strides.erase(strides.begin() + dim);
  return recorded("SelectBackward", *this,
                  detail::make_view(*this, shape, strides, impl.offset + index * impl.strides[dim]),
                  scatter_back(*this, [=](const Tensor& z) { return z.select(dim, index); }));
}

Tensor Tensor::squeeze() const {
  const auto& impl = impl_of(*this, "squeeze");
  SmallDims shape, strides;
  for (size_t i = 0; i < impl.shape.size(); ++i) {
    if (impl.shape[i] == 1) continue;
    shape.push_back(impl.shape[i]);
    strides.push_back(impl.strides[i]);
  }
  return recorded("SqueezeBackward", *this, detail::make_view(*this, shape, strides, impl.offset),
                  [s = this->shape().vec()](const Tensor& g) { return g.reshape(s); });
}

Tensor Tensor::squeeze(int64_t dim) const {
  const auto& impl = impl_of(*this, "squeeze");
  if (impl.dim() == 0) return *this;
  dim = wrap_dim(dim, impl.dim(), "squeeze");
  if (impl.shape[dim] != 1) return *this;
  SmallDims shape = impl.shape, strides = impl.strides;
  shape.erase(shape.begin() + dim);
  strides.erase(strides.begin() + dim);
  return recorded("SqueezeBackward", *this, detail::make_view(*this, shape, strides, impl.offset),
                  [s = this->shape().vec()](const Tensor& g) { return g.reshape(s); });
}

Tensor Tensor::unsqueeze(int64_t dim) const {
  const auto& impl = impl_of(*this, "unsqueeze");
  dim = wrap_dim(dim, impl.dim() + 1, "unsqueeze");
  SmallDims shape = impl.shape, strides = impl.strides;
  int64_t stride = dim < impl.dim() ? impl.shape[dim] * impl.strides[dim] : 1;
  shape.insert(shape.begin() + dim, 1);
  strides.insert(strides.begin() + dim, stride);
  return recorded("UnsqueezeBackward", *this, detail::make_view(*this, shape, strides, impl.offset),
                  [s = this->shape().vec()](const Tensor& g) { return g.reshape(s); });
}

Tensor Tensor::expand(IntArrayRef shape) const {
  return recorded("ExpandBackward", *this, detail::expand_view(*this, shape),
                  [s = this->shape().vec()](const Tensor& g) { return ag::sum_to(g, s); });
}

Tensor detail::expand_view(const Tensor& self, IntArrayRef shape) {
  const auto& impl = impl_of(self, "expand");
  int64_t n = static_cast<int64_t>(shape.size());
  KILN_CHECK(n >= impl.dim(), "expand: cannot expand shape ", self.shape(), " to ", shape,
             " (fewer dimensions)");
  SmallDims out_shape(n), out_strides(n);
  for (int64_t i = n - 1; i >= 0; --i) {
    int64_t src = i - (n - impl.dim());
    int64_t want = shape[i];
    if (src < 0) {
      KILN_CHECK(want >= 0, "expand: size -1 is not allowed for a new leading dimension in ",
                 shape);
      out_shape[i] = want;
      out_strides[i] = 0;
      continue;
    }
    int64_t have = impl.shape[src];
    if (want == -1) want = have;
    KILN_CHECK(have == want || have == 1, "expand: the expanded size ", want,
               " must match the existing size ", have, " at dimension ", i, " (shape ",
               self.shape(), " to ", shape, ")");
    out_shape[i] = want;
    out_strides[i] = have == want ? impl.strides[src] : 0;
  }
  return detail::make_view(self, out_shape, out_strides, impl.offset);
}

// -- copies ----------------------------------------------------------------------------

Tensor Tensor::contiguous() const {
  return impl_of(*this, "contiguous").is_contiguous() ? *this : clone();
}

Tensor Tensor::clone() const {
  const auto& impl = impl_of(*this, "clone");
  Tensor out = detail::make_tensor(impl.device(), shape(), impl.dtype);
  detail::dispatch(detail::OpId::copy, {impl_.get()}, {out.impl().get()});
  return recorded("CloneBackward", *this, out, [](const Tensor& g) { return g; });
}

}  // namespace kiln
