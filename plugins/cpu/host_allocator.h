// host_allocator.h — a caching allocator for host memory, one per logical CPU device.
//
// Requests are rounded up to a size class and served from that class's free list, so
// a training loop that allocates the same tensor shapes step after step stops calling
// malloc (and stops taking page faults on fresh pages) after the first step:
//
//   size classes        | step
//   ------------------- | -----------------------------------------------
//   1 B .. 512 B        | multiples of 64 B (8 classes)
//   512 B .. 64 MiB     | four per power of two: 1, 1.25, 1.5, 1.75 x 2^k
//   >= 64 MiB           | multiples of 2 MiB, cached by exact size and reused for
//                       | requests up to 1/8 smaller; returned to the system by
//                       | empty_cache or when an allocation fails
//
// Every block is 64-byte aligned (alignments above 64 are honoured by an uncached
// system allocation). A 0-byte request succeeds with a non-null pointer that must
// not be dereferenced, and uses no memory.
//
// Statistics follow kiln_memory_stats: bytes_in_use counts the *rounded* block sizes
// of live allocations (the memory they actually hold), bytes_reserved everything
// obtained from the system (in use + cached), num_system_allocations every
// successful system call.
//
// Thread safety: every method may be called concurrently; one uncontended mutex on
// the hot path, no syscall once a class has cached blocks.
#ifndef KILN_CPU_HOST_ALLOCATOR_H
#define KILN_CPU_HOST_ALLOCATOR_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "kiln/c_api.h"

namespace kiln::cpu {

class HostAllocator;

/// One allocation; handed across the ABI as the opaque kiln_buffer.
struct HostBlock {
  HostAllocator* owner;
  void* data;
  size_t size;         // rounded size actually held (0 for the shared 0-byte block)
  int32_t size_class;  // index into the free lists, -1 = large, -2 = uncached, -3 = empty
  bool in_use;
};

class HostAllocator {
 public:
  /// `system_limit_bytes`: requests above it fail at once with OUT_OF_MEMORY instead
  /// of asking the system (physical memory is the natural limit for host tensors).
  explicit HostAllocator(uint64_t system_limit_bytes);
  ~HostAllocator();
  HostAllocator(const HostAllocator&) = delete;
  HostAllocator& operator=(const HostAllocator&) = delete;

  /// Returns a block of at least `bytes`, aligned to max(64, alignment).
  /// Throws kiln::sdk::Error: INVALID_ARGUMENT if alignment is not a power of two,
  /// OUT_OF_MEMORY (stating the request, the bytes in use and reserved) on failure.
  HostBlock* allocate(size_t bytes, size_t alignment);

  /// Returns `block` to its free list (or to the system for uncached blocks).
  /// Throws INVALID_ARGUMENT for a block this allocator does not own or not in use.
  void deallocate(HostBlock* block);

  /// Frees every cached block (those not in use).
  void empty_cache();

  kiln_memory_stats stats() const;

  /// Class index for `bytes` and that class's size; exposed for tests.
  static int32_t size_class_of(size_t bytes);
  static size_t class_size(int32_t size_class);

  static constexpr size_t kAlignment = 64;
  static constexpr size_t kLargeThreshold = size_t{64} << 20;
  static constexpr size_t kLargeGranule = size_t{2} << 20;

 private:
  void* system_alloc(size_t bytes, size_t alignment);  // with one retry after empty_cache
  // Wraps fresh system memory in a block and books it; frees `data` if that throws.
  HostBlock* new_block(void* data, size_t size, int32_t size_class);
  void release_cached_locked();

  const uint64_t system_limit_;
  mutable std::mutex mutex_;
  std::vector<std::vector<HostBlock*>> free_lists_;  // by size class
  std::vector<size_t> blocks_per_class_;             // live + cached, by size class
  std::multimap<size_t, HostBlock*> free_large_;     // by size
  HostBlock empty_block_;                            // shared by every 0-byte request

  // The counters, kept as the ABI reports them (stats() copies them under the mutex).
  kiln_memory_stats stats_{sizeof(kiln_memory_stats), 0, 0, 0, 0, 0};
};

}  // namespace kiln::cpu

#endif  // KILN_CPU_HOST_ALLOCATOR_H
