#pragma once
// The data behind a kiln::Tensor handle: a shared Storage (one device allocation)
// plus the view's shape, strides (elements) and offset. Internal to libkiln.

#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "kiln/c_api.h"
#include "kiln/dtype.h"
#include "kiln/tensor.h"
#include "runtime/storage.h"

namespace kiln::detail {

using SmallDims = boost::container::small_vector<int64_t, 6>;

/// Autograd state of one tensor; absent (null) for the common tensor that neither
/// requires grad nor was produced by a recorded op.
struct AutogradMeta {
  bool requires_grad = false;
  bool retains_grad = false;
  Tensor grad;
  std::shared_ptr<autograd::Node> grad_fn;  // null for leaves
  uint32_t output_nr = 0;
  std::weak_ptr<autograd::Node> grad_accumulator;  // leaves only
  /// Called after each accumulation into `grad` (leaves only).
  std::vector<std::function<void(const Tensor&)>> post_accumulate_grad_hooks;
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  SmallDims shape;
  SmallDims strides;
  int64_t offset = 0;  // in elements
  int64_t numel = 1;
  DType dtype = DType::Float32;
  std::unique_ptr<AutogradMeta> autograd;

  DeviceContext* device() const { return storage->device; }
  int64_t dim() const { return static_cast<int64_t>(shape.size()); }
  size_t itemsize() const { return kiln_dtype_size(static_cast<int32_t>(dtype)); }
  bool is_contiguous() const;
  /// True when two elements share a memory location (a stride 0 over size > 1).
  bool has_internal_overlap() const;
  /// Byte range [first, last) of storage the view can touch (empty when numel 0).
  std::pair<int64_t, int64_t> byte_extent() const;
};

/// Row-major strides for `shape`.
/// Wraps a possibly negative `dim` into [0, rank); throws naming `op`.
int64_t wrap_dim(int64_t dim, int64_t rank, const char* op);

SmallDims contiguous_strides(IntArrayRef shape);
/// Product of the sizes; throws on overflow or negative sizes.
int64_t checked_numel(IntArrayRef shape, const char* op);

/// A new contiguous tensor on `device` (memory uninitialized).
Tensor make_tensor(DeviceContext* device, IntArrayRef shape, DType dtype);
/// A view of `base`'s storage with new metadata.
Tensor make_view(const Tensor& base, IntArrayRef shape, IntArrayRef strides, int64_t offset);

/// `self` broadcast to `shape` as a view (not recorded by autograd).
Tensor expand_view(const Tensor& self, IntArrayRef shape);

/// The impl of a defined tensor; throws naming `op` for an undefined one.
const TensorImpl& impl_of(const Tensor& t, const char* op);

}  // namespace kiln::detail
