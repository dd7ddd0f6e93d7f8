// backend.cpp — the "reference" backend: one device whose memory is host memory.
//
// This is the part you replace first. A real accelerator would allocate with its
// driver (cudaMalloc, hipMalloc, zeMemAllocDevice, ...) and copy with its DMA API;
// everything else here stays as it is. The kit (kiln/sdk/plugin.h) turns these
// classes into the C ABI: it checks handles and arguments, keeps the allocator
// statistics, answers struct sizes and versions, and turns exceptions into status
// objects, so this file contains only what is specific to the device.
#include <kiln/sdk/plugin.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels.h"

namespace reference {

class HostDevice : public kiln::sdk::BackendDevice {
 public:
  // -- required: memory and copies ------------------------------------------------

  // Must return memory aligned to `alignment` (a power of two; the kit checked it).
  // Returning nullptr (or throwing std::bad_alloc) is reported as out of memory.
  void* allocate(size_t bytes, size_t alignment, kiln::sdk::Stream*) override {
    if (bytes > capacity_) return nullptr;  // more than the device has: out of memory
    alignment = std::max<size_t>(alignment, kAlignment);
    // aligned_alloc wants a size that is a multiple of the alignment, and a 0-byte
    // request still needs a pointer that deallocate accepts.
    const size_t rounded = bytes == 0 ? alignment : (bytes + alignment - 1) / alignment * alignment;
    if (rounded < bytes) return nullptr;  // overflow: report out of memory
    return std::aligned_alloc(alignment, rounded);
  }

  void deallocate(void* data, kiln::sdk::Stream*) override { std::free(data); }

  // All three directions are host memory here. The kit has already rejected unknown
  // kinds and null pointers, and answered 0-byte copies itself.
  void copy(kiln::sdk::CopyKind, void* dst, const void* src, size_t bytes,
            kiln::sdk::Stream*) override {
    std::memmove(dst, src, bytes);
  }

  // -- optional: what kiln-info shows ------------------------------------------------

  void properties(kiln_device_properties& p) override {
    std::snprintf(p.name, sizeof p.name, "Reference host-memory device");
    p.kind = KILN_DEVICE_KIND_ACCELERATOR;
    p.memory_alignment = kAlignment;  // every allocation is aligned at least this much
    p.total_memory_bytes = capacity_;
  }

  // -- optional: kernels (without this, every op falls back to the CPU plugin) -------

  const kiln::sdk::KernelTable* kernels() override { return &kernel_table(); }

  // Streams and events are left to the kit's defaults, which are right for a device
  // that finishes all work before each call returns. An asynchronous device overrides
  // them together: create_stream, destroy_stream, synchronize, create_event,
  // destroy_event, record_event, wait_event, synchronize_event and elapsed_ms (the
  // plugin guide, section 3, shows how a kernel then finds its stream).

 private:
  static constexpr size_t kAlignment = 64;
  // The device's memory: here, the machine's physical memory.
  const size_t capacity_ =
      static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
};

// One device. A backend with several derives from kiln::sdk::Backend and answers
// device_count() and device(index) itself.
using ReferenceBackend = kiln::sdk::SingleDeviceBackend<HostDevice>;

}  // namespace reference

// The entry point kiln_plugin_init, exported under the name the loader looks for. The
// name must match the file name: libkiln_reference.so (kiln_add_plugin(reference ...)).
KILN_SDK_PLUGIN(reference::ReferenceBackend, "reference", "0.1.0")
