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

namespace kiln::detail {

using SmallDims = boost::container::small_vector<int64_t, 6>;

class DeviceContext;

/// One allocation on one device. Freed through the plugin when the last view goes.
struct Storage {
  Storage(DeviceContext* device, kiln_buffer* buffer, void* data, size_t bytes)
      : device(device), buffer(buffer), data(data), bytes(bytes) {}
  /// Memory Kiln did not allocate (from_blob, from_dlpack): `release` (if any) is called
  /// with `data` instead of the plugin's deallocate.
  Storage(DeviceContext* device, void* data, size_t bytes, std::function<void(void*)> release)
      : device(device),
        buffer(nullptr),
        data(data),
        bytes(bytes),
        release(std::move(release)),
        external(true) {}
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  DeviceContext* const device;
  kiln_buffer* const buffer;
  void* const data;
  const size_t bytes;
  const std::function<void(void*)> release;
  const bool external = false;
  /// Bumped by every in-place write, so autograd can tell that a tensor it saved
  /// for backward was modified afterwards.
  uint64_t version = 0;
};

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
