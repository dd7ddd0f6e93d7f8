// The allocators KILN_CUDA_ALLOCATOR can swap in for the caching one, and what all
// of them share (handle checks, alignment, the out-of-memory message).
#include <algorithm>
#include <bit>
#include <limits>
#include <mutex>

#include "allocator.h"
#include "caching_allocator.h"
#include "device.h"
#include "kiln/sdk/status.h"

namespace kiln::cuda {

namespace {

// cudaMalloc and the pools return addresses aligned to 256 bytes, which is also what
// Kiln promises (kiln_device_properties.memory_alignment); larger alignments pad.
constexpr size_t kSystemAlignment = CudaDevice::kAlignment;

// Book-keeping shared by the two pass-through allocators.
struct Counters {
  uint64_t in_use = 0;
  uint64_t peak = 0;
  uint64_t allocations = 0;
  uint64_t system_allocations = 0;

  void add(uint64_t bytes) {
    in_use += bytes;
    peak = std::max(peak, in_use);
    ++allocations;
  }
};

struct SystemAllocation : Allocation {
  void* base = nullptr;  // what cudaMalloc / cudaMallocAsync returned
};

// Moves `base` up to `alignment` inside a request padded by padded_request.
void* aligned_in(void* base, size_t alignment) {
  return reinterpret_cast<void*>(round_up(reinterpret_cast<uintptr_t>(base), alignment));
}

// -- direct: cudaMalloc / cudaFree per request ------------------------------------------

class DirectAllocator final : public Allocator {
 public:
  explicit DirectAllocator(CudaDevice& device) : device_(device) {
    empty_.owner = this;
    empty_.in_use = true;
    empty_.data = device.empty_allocation();
  }

  Allocation* allocate(size_t bytes, size_t alignment, cudaStream_t) override {
    const size_t padded = padded_request(device_, name(), bytes, alignment, kSystemAlignment);
    alignment = std::max<size_t>(alignment, CudaDevice::kAlignment);
    std::lock_guard lock(mutex_);
    if (bytes == 0) {
      ++counters_.allocations;
      return &empty_;
    }
    const size_t size = round_up(padded, kSystemAlignment);
    if (size == 0 || size > device_.properties().totalGlobalMem) {
      throw_out_of_memory(device_, name(), bytes, counters_.in_use, counters_.in_use);
    }
    device_.make_current();
    void* base = nullptr;
    cudaError_t status = cudaMalloc(&base, size);
    if (status == cudaErrorMemoryAllocation) {
      // Nothing is cached here; the retry still helps when memory freed by other
      // work in the process (another library's cache) has just come back.
      cudaGetLastError();
      device_.wait_device("waiting before retrying cudaMalloc");
      status = cudaMalloc(&base, size);
    }
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw_out_of_memory(device_, name(), bytes, counters_.in_use, counters_.in_use);
    }
    if (status != cudaSuccess) device_.fail(status, "cudaMalloc");
    auto* a = new (std::nothrow) SystemAllocation;
    if (a == nullptr) {
      cudaFree(base);
      throw std::bad_alloc();
    }
    a->owner = this;
    a->in_use = true;
    a->base = base;
    a->data = aligned_in(base, alignment);
    a->size = size;
    counters_.add(size);
    ++counters_.system_allocations;
    return a;
  }

  void deallocate(Allocation* allocation, cudaStream_t) override {
    std::lock_guard lock(mutex_);
    KILN_SDK_CHECK(allocation != nullptr && allocation->owner == this, KILN_STATUS_INVALID_ARGUMENT,
                   "buffer does not belong to ", device_.label());
    if (allocation == &empty_) return;
    KILN_SDK_CHECK(allocation->in_use, KILN_STATUS_INVALID_ARGUMENT, "buffer released twice");
    auto* a = static_cast<SystemAllocation*>(allocation);
    device_.make_current();
    // cudaFree waits for the whole device: that is what this mode measures. The wait
    // is counted, so KILN_CUDA_ALLOCATOR=direct shows up in the debug counters.
    device_.count_host_wait();
    const cudaError_t status = cudaFree(a->base);
    counters_.in_use -= a->size;
    a->in_use = false;
    delete a;
    if (status != cudaSuccess) device_.fail(status, "cudaFree");
  }

  void empty_cache() override {}

  kiln_memory_stats stats() const override {
    std::lock_guard lock(mutex_);
    kiln_memory_stats s{};
    s.struct_size = sizeof s;
    s.bytes_in_use = counters_.in_use;
    s.bytes_reserved = counters_.in_use;  // nothing is kept beyond the live allocations
    s.peak_bytes_in_use = counters_.peak;
    s.num_allocations = counters_.allocations;
    s.num_system_allocations = counters_.system_allocations;
    return s;
  }

  const char* name() const noexcept override { return "direct"; }

 private:
  CudaDevice& device_;
  mutable std::mutex mutex_;
  Counters counters_;
  Allocation empty_;
};

// -- cuda_malloc_async: the driver's stream-ordered pool ----------------------------------

class AsyncAllocator final : public Allocator {
 public:
  explicit AsyncAllocator(CudaDevice& device) : device_(device) {
    empty_.owner = this;
    empty_.in_use = true;
    empty_.data = device.empty_allocation();
    device_.make_current();
    if (const cudaError_t status = cudaDeviceGetDefaultMemPool(&pool_, device.ordinal());
        status != cudaSuccess) {
      device_.fail(status, "cudaDeviceGetDefaultMemPool");
    }
    // By default the pool returns memory to the system at every synchronization;
    // keeping it is what makes the pool a cache worth comparing with Kiln's.
    uint64_t keep_everything = std::numeric_limits<uint64_t>::max();
    if (const cudaError_t status =
            cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep_everything);
        status != cudaSuccess) {
      device_.fail(status, "cudaMemPoolSetAttribute");
    }
  }

  Allocation* allocate(size_t bytes, size_t alignment, cudaStream_t stream) override {
    const size_t padded = padded_request(device_, name(), bytes, alignment, kSystemAlignment);
    alignment = std::max<size_t>(alignment, CudaDevice::kAlignment);
    std::lock_guard lock(mutex_);
    if (bytes == 0) {
      ++counters_.allocations;
      return &empty_;
    }
    const size_t size = round_up(padded, kSystemAlignment);
    if (size == 0 || size > device_.properties().totalGlobalMem) {
      throw_out_of_memory(device_, name(), bytes, counters_.in_use, reserved());
    }
    device_.make_current();
    void* base = nullptr;
    cudaError_t status = cudaMallocFromPoolAsync(&base, size, pool_, stream);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      trim();
      status = cudaMallocFromPoolAsync(&base, size, pool_, stream);
    }
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      // A failed request can leave the pool holding what it reserved on the way (seen
      // on an H200: 139 GiB reserved after a failed 140 GiB request): trim the pool
      // again (a device wait; it also returns whatever else the pool held free).
      trim();
      throw_out_of_memory(device_, name(), bytes, counters_.in_use, reserved());
    }
    if (status != cudaSuccess) device_.fail(status, "cudaMallocFromPoolAsync");
    auto* a = new (std::nothrow) SystemAllocation;
    if (a == nullptr) {
      cudaFreeAsync(base, stream);
      throw std::bad_alloc();
    }
    a->owner = this;
    a->in_use = true;
    a->base = base;
    a->data = aligned_in(base, alignment);
    a->size = size;
    counters_.add(size);
    // The pool does not say when it went to the system; its reservation growing does.
    const uint64_t now = reserved();
    if (now > last_reserved_) ++counters_.system_allocations;
    last_reserved_ = now;
    return a;
  }

  void deallocate(Allocation* allocation, cudaStream_t stream) override {
    std::lock_guard lock(mutex_);
    KILN_SDK_CHECK(allocation != nullptr && allocation->owner == this, KILN_STATUS_INVALID_ARGUMENT,
                   "buffer does not belong to ", device_.label());
    if (allocation == &empty_) return;
    KILN_SDK_CHECK(allocation->in_use, KILN_STATUS_INVALID_ARGUMENT, "buffer released twice");
    auto* a = static_cast<SystemAllocation*>(allocation);
    device_.make_current();
    const cudaError_t status = cudaFreeAsync(a->base, stream);
    counters_.in_use -= a->size;
    a->in_use = false;
    delete a;
    if (status != cudaSuccess) device_.fail(status, "cudaFreeAsync");
  }

  void empty_cache() override {
    std::lock_guard lock(mutex_);
    trim();
  }

  kiln_memory_stats stats() const override {
    std::lock_guard lock(mutex_);
    kiln_memory_stats s{};
    s.struct_size = sizeof s;
    s.bytes_in_use = counters_.in_use;
    s.bytes_reserved = reserved();
    s.peak_bytes_in_use = counters_.peak;
    s.num_allocations = counters_.allocations;
    s.num_system_allocations = counters_.system_allocations;
    return s;
  }

  const char* name() const noexcept override { return "cuda_malloc_async"; }

 private:
  uint64_t reserved() const {
    uint64_t bytes = 0;
    if (cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &bytes) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return bytes;
  }

  // Frees (cudaFreeAsync) take effect in stream order: wait for the device so that
  // everything released so far is back in the pool, then hand it all to the system.
  void trim() {
    device_.wait_device("releasing the memory pool");
    cudaMemPoolTrimTo(pool_, 0);
    cudaGetLastError();
    last_reserved_ = reserved();
  }

  CudaDevice& device_;
  cudaMemPool_t pool_ = nullptr;
  mutable std::mutex mutex_;
  Counters counters_;
  uint64_t last_reserved_ = 0;
  Allocation empty_;
};

}  // namespace

std::unique_ptr<Allocator> make_allocator(AllocatorKind kind, CudaDevice& device) {
  switch (kind) {
    case AllocatorKind::MallocAsync:
      return std::make_unique<AsyncAllocator>(device);
    case AllocatorKind::Direct:
      return std::make_unique<DirectAllocator>(device);
    case AllocatorKind::Caching:
      break;
  }
  return std::make_unique<CachingAllocator>(device);
}

Allocation* checked_allocation(kiln_buffer* buffer, const Allocator& owner) {
  auto* a = reinterpret_cast<Allocation*>(buffer);
  KILN_SDK_CHECK(a != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null buffer");
  KILN_SDK_CHECK(a->tag == Allocation::kTag, KILN_STATUS_INVALID_ARGUMENT,
                 "not a CUDA buffer handle");
  KILN_SDK_CHECK(a->owner == &owner, KILN_STATUS_INVALID_ARGUMENT,
                 "buffer belongs to another device");
  KILN_SDK_CHECK(a->in_use, KILN_STATUS_INVALID_ARGUMENT, "buffer released twice");
  return a;
}

size_t padded_request(CudaDevice& device, const char* allocator, size_t bytes, size_t alignment,
                      size_t base_alignment) {
  KILN_SDK_CHECK(alignment == 0 || std::has_single_bit(alignment), KILN_STATUS_INVALID_ARGUMENT,
                 "alignment ", alignment, " is not a power of two");
  alignment = std::max<size_t>(alignment, CudaDevice::kAlignment);
  const size_t extra = alignment > base_alignment ? alignment - base_alignment : 0;
  if (bytes > std::numeric_limits<size_t>::max() - extra) {
    throw_out_of_memory(device, allocator, bytes, 0, 0);
  }
  return bytes + extra;
}

void throw_out_of_memory(CudaDevice& device, const char* allocator, size_t bytes, uint64_t in_use,
                         uint64_t reserved) {
  std::string free_text;
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
    free_text = sdk::str_cat("; the device has ", human_bytes(free_bytes), " free of ",
                             human_bytes(total_bytes));
  } else {
    cudaGetLastError();
  }
  throw sdk::Error(
      KILN_STATUS_OUT_OF_MEMORY,
      sdk::str_cat("out of memory on ", device.label(), ": cannot allocate ", bytes, " bytes (",
                   human_bytes(bytes), "); ", in_use, " bytes in use and ", reserved,
                   " bytes reserved by the ", allocator, " allocator", free_text));
}

}  // namespace kiln::cuda
