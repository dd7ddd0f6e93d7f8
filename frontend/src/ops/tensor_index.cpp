// Tensor::index and Tensor::index_put_ (kiln/indexing.h): basic indices become views
// (select, slice, unsqueeze); index tensors become one index_select over the indexed
// dimensions moved to the front and flattened, with the flat position computed from
// the broadcast index tensors. All of it is catalogue ops, so it runs everywhere and
// carries gradients.

#include <algorithm>
#include <limits>
#include <numeric>

#include "kiln/autograd.h"
#include "kiln/indexing.h"
#include "kiln/ops.h"
#include "kiln/profiler.h"
#include "ops/common.h"

namespace kiln {

namespace {

using indexing::EllipsisIndex;
using indexing::NoneIndex;
using indexing::Slice;
using indexing::TensorIndex;

// How many dimensions of the indexed tensor an entry consumes.
int64_t consumed(const TensorIndex& index) {
  return std::visit(
      [](const auto& v) -> int64_t {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, NoneIndex> || std::is_same_v<V, EllipsisIndex>)
          return 0;
        else if constexpr (std::is_same_v<V, Tensor>)
          return v.dtype() == DType::Bool ? v.dim() : 1;
        else
          return 1;
      },
      index.value());
}

// The outcome of walking an index list: the basic view, and the index tensors with
// the dimensions of that view they index (ascending).
struct Walk {
  Tensor view;
  std::vector<int64_t> dims;
  std::vector<Tensor> indices;
  int64_t tensors = 0;     // index tensors in the list
  bool from_mask = false;  // the one index tensor was bool: its positions are distinct
  bool all_masks = true;   // every index tensor was bool: its coordinates are in range
};

Walk walk(const Tensor& x, const std::vector<TensorIndex>& list, const char* op) {
  detail::impl_of(x, op);
  int64_t total = 0, ellipses = 0;
  for (const TensorIndex& i : list) {
    total += consumed(i);
    ellipses += std::holds_alternative<EllipsisIndex>(i.value());
  }
  KILN_CHECK(ellipses <= 1, op, ": at most one Ellipsis, got ", ellipses);
  KILN_CHECK(total <= x.dim(), op, ": ", total, " indices for a tensor of shape ", x.shape());
  Walk w{x, {}, {}};
  int64_t cur = 0;  // the dimension of w.view the next entry indexes
  for (const TensorIndex& entry : list) {
    const auto& v = entry.value();
    if (const auto* i = std::get_if<int64_t>(&v)) {
      w.view = w.view.select(cur, *i);
    } else if (const auto* s = std::get_if<Slice>(&v)) {
      w.view =
          w.view.slice(cur, s->start.value_or(0),
                       s->stop.value_or(std::numeric_limits<int64_t>::max()), s->step.value_or(1));
      ++cur;
    } else if (std::holds_alternative<NoneIndex>(v)) {
      w.view = w.view.unsqueeze(cur);
      ++cur;
    } else if (std::holds_alternative<EllipsisIndex>(v)) {
      cur += x.dim() - total;
    } else {
      const Tensor& t = std::get<Tensor>(v);
      detail::check_same_device(op, {&x, &t});
      if (t.dim() == 0 && (t.dtype() == DType::Int64 || t.dtype() == DType::Int32)) {
        // An integer, as in PyTorch: no advanced index, so no dims move (a host read).
        w.view = w.view.select(cur, t.item<int64_t>());
        continue;
      }
      ++w.tensors;
      w.from_mask = t.dtype() == DType::Bool;
      w.all_masks &= w.from_mask;
      if (t.dtype() == DType::Bool) {
        KILN_CHECK(t.dim() > 0, op, ": a 0-d bool index is not supported");
        for (int64_t d = 0; d < t.dim(); ++d)
          KILN_CHECK(t.size(d) == w.view.size(cur + d), op, ": a bool index of shape ", t.shape(),
                     " does not match the indexed shape ", w.view.shape(), " at dimension ",
                     cur + d);
        const Tensor coords = nonzero(t);
        for (int64_t d = 0; d < t.dim(); ++d) {
          w.dims.push_back(cur + d);
          w.indices.push_back(coords.select(1, d));
        }
        cur += t.dim();
      } else {
        KILN_CHECK(t.dtype() == DType::Int64 || t.dtype() == DType::Int32, op,
                   ": an index tensor must be int64, int32 or bool, got ", t.dtype());
        w.dims.push_back(cur);
        w.indices.push_back(t.to(DType::Int64));
        ++cur;
      }
    }
  }
  return w;
}

// The advanced part: the indexed dimensions moved first and flattened, and the flat
// position of each index tuple (shape `shape`).
struct Flat {
  std::vector<int64_t> perm;   // view -> [indexed dims..., other dims...]
  std::vector<int64_t> shape;  // the broadcast shape of the index tensors
  Tensor position;             // int64, `shape`, into the flattened indexed dims
  bool adjacent = true;        // the indexed dims were next to each other
};

Flat flatten_indices(const Walk& w, const char* op) {
  Flat f;
  const Tensor& view = w.view;
  f.perm = w.dims;
  for (int64_t d = 0; d < view.dim(); ++d)
    if (std::find(w.dims.begin(), w.dims.end(), d) == w.dims.end()) f.perm.push_back(d);
  for (size_t k = 1; k < w.dims.size(); ++k) f.adjacent &= w.dims[k] == w.dims[k - 1] + 1;
  detail::SmallDims shape(w.indices[0].shape().begin(), w.indices[0].shape().end());
  for (const Tensor& t : w.indices) shape = detail::broadcast_shapes(shape, t.shape(), op);
  f.shape.assign(shape.begin(), shape.end());
  // Negative positions count from the end; one index tensor is range-checked by
  // index_select itself, several need one check of their own (a host read).
  std::vector<Tensor> wrapped;
  Tensor bad;
  for (size_t k = 0; k < w.indices.size(); ++k) {
    const int64_t size = view.size(w.dims[k]);
    const Tensor& t = w.indices[k];
    // -size..-1 count from the end; anything below stays as written, so that the
    // range check names the index the caller wrote (-5, not -2, in a size-3 dim).
    wrapped.push_back(where(logical_and(t < 0, t >= -size), t + size, t));
    if (w.indices.size() > 1 && !w.all_masks) {
      Tensor out = logical_or(wrapped.back() < 0, wrapped.back() >= size).any();
      bad = bad.defined() ? logical_or(bad, out) : out;
    }
  }
  if (bad.defined()) {
    auto scope = profiler::record_function(std::string(op) + ": check the indices (syncs)");
    if (bad.item<bool>())
      for (size_t k = 0; k < wrapped.size(); ++k) {
        const int64_t size = view.size(w.dims[k]);
        const Tensor out =
            masked_select(wrapped[k], logical_or(wrapped[k] < 0, wrapped[k] >= size));
        KILN_CHECK(out.numel() == 0, op, ": index ", out.reshape({-1})[0].item<int64_t>(),
                   " is out of range for dimension ", w.dims[k], " with size ", size,
                   " (indexed shape ", view.shape(), ")");
      }
  }
  Tensor position;
  for (size_t k = 0; k < wrapped.size(); ++k) {
    const int64_t size = view.size(w.dims[k]);
    position = position.defined() ? position * size + wrapped[k] : wrapped[k];
  }
  f.position = position.expand(f.shape);
  return f;
}

// The view with its indexed dims moved first and merged into one: [S, others...].
std::vector<int64_t> merged_shape(const Tensor& view, const Walk& w) {
  int64_t s = 1;
  for (int64_t d : w.dims) s *= view.size(d);
  std::vector<int64_t> shape{s};
  for (int64_t d = 0; d < view.dim(); ++d)
    if (std::find(w.dims.begin(), w.dims.end(), d) == w.dims.end()) shape.push_back(view.size(d));
  return shape;
}

// [B..., others...] -> the result's order: B in place of the indexed dims when they
// were adjacent, else first.
std::vector<int64_t> result_order(const Flat& f, const Walk& w, int64_t rank) {
  const int64_t b = static_cast<int64_t>(f.shape.size());
  std::vector<int64_t> order(static_cast<size_t>(rank));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (!f.adjacent || w.dims[0] == 0) return order;
  const int64_t before = w.dims[0];  // other dims that come before the indexed ones
  std::vector<int64_t> moved;
  for (int64_t d = 0; d < before; ++d) moved.push_back(b + d);
  for (int64_t d = 0; d < b; ++d) moved.push_back(d);
  for (int64_t d = b + before; d < rank; ++d) moved.push_back(d);
  return moved;
}

Tensor gather_indexed(const Walk& w, const Flat& f) {
  Tensor merged = w.view.permute(f.perm).reshape(merged_shape(w.view, w));
  Tensor picked = index_select(merged, 0, f.position.reshape({-1}));
  std::vector<int64_t> shape = f.shape;
  for (int64_t d = 1; d < merged.dim(); ++d) shape.push_back(merged.size(d));
  Tensor out = picked.reshape(shape);
  return out.permute(result_order(f, w, out.dim()));
}

std::vector<int64_t> inverse(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return inv;
}

}  // namespace

Tensor Tensor::index(const std::vector<TensorIndex>& indices) const {
  Walk w = walk(*this, indices, "index");
  if (w.indices.empty()) return w.view;
  return gather_indexed(w, flatten_indices(w, "index"));
}

Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Tensor& values,
                           bool accumulate) {
  Walk w = walk(*this, indices, "index_put_");
  detail::check_same_device("index_put_", {this, &values});
  KILN_CHECK(!is_grad_enabled() || !values.requires_grad(),
             "index_put_: values that require grad are not supported (index_put_ is not recorded "
             "by autograd); detach them or write under kiln::NoGradGuard");
  if (w.indices.empty()) {
    if (accumulate)
      w.view.add_(values);
    else
      w.view.copy_(values);
    return *this;
  }
  const Flat f = flatten_indices(w, "index_put_");
  // The values in the [B..., others...] order of the flattened positions.
  const std::vector<int64_t> merged = merged_shape(w.view, w);
  std::vector<int64_t> result_shape = f.shape;
  result_shape.insert(result_shape.end(), merged.begin() + 1, merged.end());
  const std::vector<int64_t> order = result_order(f, w, static_cast<int64_t>(result_shape.size()));
  std::vector<int64_t> indexed_shape;  // what index() would return
  for (int64_t d : order) indexed_shape.push_back(result_shape[static_cast<size_t>(d)]);
  Tensor v = values.to(dtype()).expand(indexed_shape).permute(inverse(order));
  const Tensor position = f.position.reshape({-1});
  if (position.numel() == 0) return *this;  // nothing named: nothing to write
  // One row per named position (a count, not -1: a size-0 dim among the others would
  // leave -1 undetermined).
  std::vector<int64_t> rows{position.numel()};
  rows.insert(rows.end(), merged.begin() + 1, merged.end());
  v = v.reshape(rows).contiguous();
  Tensor base = w.view.permute(f.perm).reshape(merged);
  Tensor updated;
  {
    NoGradGuard no_grad;
    if (accumulate) {
      updated = base.index_add(0, position, v);
    } else {
      // How often each merged position is named; hit ones take the new values.
      const TensorOptions i64 = TensorOptions(DType::Int64).device(device());
      Tensor hits = zeros({merged[0]}, i64).index_add(0, position, ones({position.numel()}, i64));
      std::vector<int64_t> hit_shape(merged.size(), 1);
      hit_shape[0] = merged[0];
      const Tensor hit = (hits > 0).reshape(hit_shape);
      if (values.numel() == 1) {  // one value: naming a position twice is harmless
        updated = where(hit, values.to(dtype()).reshape({}), base);
      } else {
        if (!(w.tensors == 1 && w.from_mask)) {  // a mask names each position once
          Tensor most = hits.amax();
          auto scope =
              profiler::record_function("index_put_: check for repeated positions (syncs)");
          KILN_CHECK(most.item<int64_t>() <= 1,
                     "index_put_: a position is named more than once; use accumulate=true to "
                     "add the values, or name each position once");
        }
        // Added to -0.0, which keeps every value as written (a -0.0 stays -0.0).
        updated = where(hit, full_like(base, -0.0).index_add(0, position, v), base);
      }
    }
  }
  std::vector<int64_t> unmerged;
  for (int64_t d : f.perm) unmerged.push_back(w.view.size(d));
  w.view.copy_(updated.reshape(unmerged).permute(inverse(f.perm)));
  return *this;
}

Tensor Tensor::operator[](const Tensor& index) const { return this->index({index}); }

Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, Scalar value) {
  return index_put_(indices, scalar_tensor(value, TensorOptions(dtype()).device(device())));
}

}  // namespace kiln
