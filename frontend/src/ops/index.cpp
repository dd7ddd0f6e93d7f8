// Joining and indexing: cat/stack are copies into slices of one output;
// index_select and gather are catalogue ops.

#include <algorithm>

#include "autograd/record.h"
#include "kiln/autograd.h"
#include "kiln/ops.h"
#include "ops/common.h"

namespace kiln {

namespace ag = detail::autograd_impl;
using Grads = std::vector<Tensor>;
using Saved = std::vector<Tensor>;

namespace detail {
void check_index_in_range(const Tensor& index, int64_t size, int64_t d, const char* op) {
  if (index.numel() == 0) return;
  const int64_t first = amin(index).item<int64_t>(), last = amax(index).item<int64_t>();
  KILN_CHECK(first >= 0 && last < size, op, ": index ", first < 0 ? first : last,
             " is out of range for dimension ", d, " of size ", size);
}
}  // namespace detail

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  KILN_CHECK(!tensors.empty(), "cat: expected a non-empty list of tensors");
  // PyTorch's legacy rule: a 1-D tensor of size 0 joins anything (the `acc = cat({acc,
  // x})` idiom starting from an empty tensor); it is skipped, except for the dtype.
  auto legacy_empty = [](const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; };
  const auto found = std::find_if_not(tensors.begin(), tensors.end(), legacy_empty);
  const Tensor& first = found == tensors.end() ? tensors[0] : *found;
  detail::impl_of(first, "cat");
  KILN_CHECK(first.dim() > 0,
             "cat: zero-dimensional tensors cannot be concatenated "
             "(use stack)");
  const bool all_legacy = found == tensors.end();
  const int64_t d = all_legacy ? 0 : detail::wrap_dim(dim, first.dim(), "cat");
  const size_t first_index = static_cast<size_t>(&first - tensors.data());
  DType dtype = first.dtype();
  int64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    detail::check_same_device("cat", {&first, &t});
    dtype = promote_types(dtype, t.dtype());
    if (legacy_empty(t) && !all_legacy) continue;
    KILN_CHECK(t.dim() == first.dim(), "cat: tensor ", i, " has ", t.dim(),
               " dimensions but tensor ", first_index, " has ", first.dim(), " (shapes ", t.shape(),
               " and ", first.shape(), ")");
    for (int64_t j = 0; j < t.dim(); ++j)
      KILN_CHECK(j == d || t.size(j) == first.size(j), "cat: shapes ", first.shape(), " and ",
                 t.shape(), " (tensor ", i, ") differ in dimension ", j,
                 ", which is not the concatenation dimension ", d);
    total += t.size(d);
  }
  detail::SmallDims shape(first.shape().begin(), first.shape().end());
  shape[d] = total;
  Tensor out = detail::empty_on(first, shape, dtype);
  {
    NoGradGuard no_grad;  // recorded below as one node
    int64_t offset = 0;
    for (const Tensor& t : tensors) {
      if (legacy_empty(t) && !all_legacy) continue;
      if (t.numel() > 0) out.narrow(d, offset, t.size(d)).copy_(t);
      offset += t.size(d);
    }
  }
  if (is_grad_enabled()) {
    bool any = false;
    for (const Tensor& t : tensors) any |= t.requires_grad();
    if (any) {
      std::vector<int64_t> sizes;  // -1: a skipped legacy-empty tensor
      std::vector<DType> dtypes;
      for (const Tensor& t : tensors) {
        sizes.push_back(legacy_empty(t) && !all_legacy ? -1 : t.size(d));
        dtypes.push_back(t.dtype());
      }
      auto node =
          std::make_shared<ag::LambdaNode<std::function<Grads(const Saved&, const Tensor&)>>>(
              "CatBackward", std::vector<ag::SavedTensor>{},
              [sizes, dtypes, d](const Saved&, const Tensor& g) {
                Grads grads;
                int64_t offset = 0;
                for (size_t i = 0; i < sizes.size(); ++i) {
                  if (sizes[i] < 0) {
                    grads.push_back(zeros({0}, TensorOptions(dtypes[i]).device(g.device())));
                    continue;
                  }
                  grads.push_back(g.narrow(d, offset, sizes[i]).to(dtypes[i]));
                  offset += sizes[i];
                }
                return grads;
              });
      ag::attach(out, node, tensors);
    }
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  KILN_CHECK(!tensors.empty(), "stack: expected a non-empty list of tensors");
  detail::impl_of(tensors[0], "stack");
  int64_t d = detail::wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> expanded;
  expanded.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    KILN_CHECK(detail::impl_of(tensors[i], "stack").shape == tensors[0].impl()->shape,
               "stack: expects equal shapes, but tensor 0 is ", tensors[0].shape(), " and tensor ",
               i, " is ", tensors[i].shape());
    expanded.push_back(tensors[i].unsqueeze(d));
  }
  return cat(expanded, d);
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  detail::check_same_device("index_select", {&x, &index});
  KILN_CHECK(index.dim() <= 1, "index_select: the index must be 1-D, got shape ", index.shape());
  KILN_CHECK(index.dtype() == DType::Int64 || index.dtype() == DType::Int32,
             "index_select: the index must be int64 or int32, got ", index.dtype());
  if (x.dim() == 0) {  // as PyTorch: a 0-d tensor is one element along dim 0 (or -1)
    detail::wrap_dim(dim, 1, "index_select");
    KILN_CHECK(index.numel() == 1, "index_select: a 0-d tensor takes one index, got ",
               index.numel());
    return index_select(x.reshape({1}), 0, index.reshape({1})).reshape({});
  }
  int64_t d = detail::wrap_dim(dim, x.dim(), "index_select");
  Tensor idx = detail::cast(index, DType::Int64).reshape({-1});
  KILN_CHECK(x.size(d) > 0 || idx.numel() == 0, "index_select: dimension ", d, " of shape ",
             x.shape(), " is empty, so no index is in range");
  detail::SmallDims shape(x.shape().begin(), x.shape().end());
  shape[d] = idx.numel();
  Tensor out = detail::empty_on(x, shape, x.dtype());
  if (out.numel() == 0 && idx.numel() > 0) {
    // Nothing to copy, so no kernel reads the index: check it here (as PyTorch does).
    detail::check_index_in_range(idx, x.size(d), d, "index_select");
    return out;
  }
  detail::dispatch(detail::attrs::index_select{.dim = d}, {x.impl().get(), idx.impl().get()},
                   {out.impl().get()});
  if (ag::needs_grad({&x}))
    ag::record("IndexSelectBackward", out, {&x}, {idx},
               [d, shape = x.shape().vec()](const Saved& s, const Tensor& g) -> Grads {
                 Tensor dx = zeros(shape, TensorOptions(g.dtype()).device(g.device()));
                 Tensor gc = g.contiguous();
                 detail::dispatch(detail::attrs::index_add{.dim = d},
                                  {s[0].impl().get(), gc.impl().get()}, {dx.impl().get()});
                 return {dx};
               });
  return out;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  detail::check_same_device("gather", {&x, &index});
  KILN_CHECK(index.dtype() == DType::Int64 || index.dtype() == DType::Int32,
             "gather: the index must be int64 or int32, got ", index.dtype());
  KILN_CHECK(index.dim() == x.dim(),
             "gather: the index must have the same number of dimensions "
             "as the input, got index shape ",
             index.shape(), " for input shape ", x.shape());
  int64_t d = detail::wrap_dim(dim, x.dim(), "gather");
  for (int64_t i = 0; i < x.dim(); ++i)
    KILN_CHECK(i == d || index.size(i) <= x.size(i), "gather: index shape ", index.shape(),
               " exceeds input shape ", x.shape(), " in dimension ", i);
  Tensor idx = detail::cast(index, DType::Int64);
  Tensor out = detail::empty_on(x, index.shape(), x.dtype());
  detail::dispatch(detail::attrs::gather{.dim = d}, {x.impl().get(), idx.impl().get()},
                   {out.impl().get()});
  if (ag::needs_grad({&x}))
    ag::record("GatherBackward", out, {&x}, {idx},
               [d, shape = x.shape().vec()](const Saved& s, const Tensor& g) -> Grads {
                 Tensor dx = zeros(shape, TensorOptions(g.dtype()).device(g.device()));
                 Tensor gc = g.contiguous();
                 detail::dispatch(detail::attrs::scatter_add{.dim = d},
                                  {s[0].impl().get(), gc.impl().get()}, {dx.impl().get()});
                 return {dx};
               });
  return out;
}

}  // namespace kiln
