#pragma once
// One device allocation, shared by every tensor view of it (core/tensor_impl.h). Its
// device context allocates and frees it (runtime/device_context.cpp).

#include <cstddef>
#include <cstdint>
#include <functional>

#include "kiln/c_api.h"

namespace kiln::detail {

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

}  // namespace kiln::detail
