// allocator.h — device memory behind allocate/deallocate, one allocator per device.
//
// KILN_CUDA_ALLOCATOR picks the implementation:
//   caching            (default, caching_allocator.h) Kiln's own stream-ordered cache:
//                      no cudaMalloc/cudaFree once a training loop has warmed up
//   cuda_malloc_async  the driver's stream-ordered pool (cudaMallocAsync /
//                      cudaFreeAsync), set to keep what it has
//   direct             cudaMalloc and cudaFree for every request (cudaFree waits for
//                      the whole device), the baseline the other two are measured
//                      against
//
// All three follow the ABI's stream rules: memory allocated for stream s is usable by
// work on s at once; memory released on s is reused only after the work enqueued on s
// before the release, and never sooner by another stream. All three answer an
// out-of-memory failure the same way: release cached memory, retry once, then throw
// OUT_OF_MEMORY stating the request, the bytes in use and the bytes reserved.
#ifndef KILN_CUDA_ALLOCATOR_H
#define KILN_CUDA_ALLOCATOR_H

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "kiln/c_api.h"
#include "plugin_state.h"

namespace kiln::cuda {

class Allocator;
class CudaDevice;

/// One allocation; handed across the ABI as the opaque kiln_buffer.
struct Allocation {
  static constexpr uint32_t kTag = 0x4b425546u;  // "KBUF"
  uint32_t tag = kTag;
  bool in_use = false;
  Allocator* owner = nullptr;
  void* data = nullptr;  // what kernels see, aligned as requested
  size_t size = 0;       // bytes held (rounded), as counted in bytes_in_use
};

class Allocator {
 public:
  virtual ~Allocator() = default;

  /// At least `bytes` bytes aligned to `alignment` (a power of two), usable by work on
  /// `stream` at once. 0 bytes gives a valid pointer that must not be dereferenced.
  /// Throws kiln::sdk::Error: INVALID_ARGUMENT for a bad alignment, OUT_OF_MEMORY
  /// (after releasing cached memory and retrying once) with the request, the bytes in
  /// use and reserved, and what the device reports free.
  virtual Allocation* allocate(size_t bytes, size_t alignment, cudaStream_t stream) = 0;

  /// Releases `allocation` once the work enqueued on `stream` so far is done with it.
  /// Throws INVALID_ARGUMENT for a foreign or already released allocation.
  virtual void deallocate(Allocation* allocation, cudaStream_t stream) = 0;

  /// Returns cached memory that no allocation holds to the system.
  virtual void empty_cache() = 0;

  virtual kiln_memory_stats stats() const = 0;

  /// `stream` is being destroyed after `to` was made to wait for its work: memory
  /// released on `stream` becomes memory released on `to`.
  virtual void retag_stream(cudaStream_t stream, cudaStream_t to) { (void)stream, (void)to; }

  virtual const char* name() const noexcept = 0;
};

std::unique_ptr<Allocator> make_allocator(AllocatorKind kind, CudaDevice& device);

/// The allocation behind a buffer handle, checked: non-null, made by `owner` (this
/// device's allocator) and not yet released.
Allocation* checked_allocation(kiln_buffer* buffer, const Allocator& owner);

/// The out-of-memory error every allocator throws, e.g. "out of memory on cuda:0:
/// cannot allocate 1125899906842624 bytes (1.0 PiB); 2048 bytes in use and
/// 2097152 bytes reserved by the caching allocator; the device has 79.0 GiB free of
/// 79.6 GiB".
[[noreturn]] void throw_out_of_memory(CudaDevice& device, const char* allocator, size_t bytes,
                                      uint64_t in_use, uint64_t reserved);

/// Checks `alignment` (0 means the default) and returns the bytes a request must
/// reserve so that an address aligned to `base_alignment` can be moved up to
/// `alignment`; throws INVALID_ARGUMENT / OUT_OF_MEMORY on overflow.
size_t padded_request(CudaDevice& device, const char* allocator, size_t bytes, size_t alignment,
                      size_t base_alignment);

/// Rounds `value` up to a multiple of `multiple` (a power of two); 0 on overflow.
inline size_t round_up(size_t value, size_t multiple) {
  const size_t rounded = (value + multiple - 1) & ~(multiple - 1);
  return rounded < value ? 0 : rounded;
}

}  // namespace kiln::cuda

#endif  // KILN_CUDA_ALLOCATOR_H
