// caching_allocator.h — the default device allocator: a stream-ordered cache of
// cudaMalloc'd segments, split into blocks and merged back, so that a training loop
// stops calling cudaMalloc/cudaFree (which synchronize and take tens of
// microseconds) after its first step.
//
// Size classes and segments:
//
//   request (after alignment padding) | block size                 | carved from
//   ---------------------------------- | -------------------------- | ------------------------
//   0 B                                | none: a shared valid pointer, no memory
//   1 B .. 1 MiB                       | multiple of 512 B           | 2 MiB "small" segments
//   > 1 MiB                            | multiple of 2 MiB           | "large" segments of the
//                                      |                            | rounded size
//
// A request takes the smallest cached free block of its pool that fits (best fit)
// and splits off the rest when the rest is itself a whole block (>= 512 B small,
// >= 2 MiB large), so waste per live allocation is below one rounding step (512 B or
// 2 MiB). Freed blocks merge with free neighbours released on the same stream. Only
// when no cached block fits is a segment allocated.
//
// Stream rule: a block freed on stream s goes back to the pool tagged with s and is
// reused at once by later allocations for s (stream order makes that safe). Another
// stream t takes it only after an event recorded when it was freed has completed
// (checked with cudaEventQuery, never waited for); while the device has no stream
// besides its default one, frees record no event (nothing could use one) and a later
// cross-stream request records it then, which covers the same work. A destroyed
// stream's blocks move to the default stream after the default stream is made to
// wait for it.
//
// Out of memory: wait for the device, release every cached segment that no
// allocation holds, retry once, then throw OUT_OF_MEMORY (allocator.h).
//
// Statistics: bytes_in_use counts the block sizes of live allocations,
// bytes_reserved the segments obtained from cudaMalloc, num_system_allocations the
// cudaMalloc calls that succeeded. Every method is thread-safe (one mutex).
#ifndef KILN_CUDA_CACHING_ALLOCATOR_H
#define KILN_CUDA_CACHING_ALLOCATOR_H

#include <mutex>
#include <set>
#include <vector>

#include "allocator.h"

namespace kiln::cuda {

class CachingAllocator final : public Allocator {
 public:
  static constexpr size_t kBlockRounding = 512;
  static constexpr size_t kSmallLimit = size_t{1} << 20;
  static constexpr size_t kSmallSegment = size_t{2} << 20;
  static constexpr size_t kLargeRounding = size_t{2} << 20;

  explicit CachingAllocator(CudaDevice& device);
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  Allocation* allocate(size_t bytes, size_t alignment, cudaStream_t stream) override;
  void deallocate(Allocation* allocation, cudaStream_t stream) override;
  void empty_cache() override;
  kiln_memory_stats stats() const override;
  void retag_stream(cudaStream_t stream, cudaStream_t to) override;
  const char* name() const noexcept override { return "caching"; }

 private:
  struct Segment;
  struct Block : Allocation {
    char* ptr = nullptr;    // start of the block in its segment
    size_t block_size = 0;  // bytes of the segment this block spans
    Segment* segment = nullptr;
    Block* prev = nullptr;  // neighbours in address order within the segment
    Block* next = nullptr;
    bool small = false;
    // While free: the stream it was released on (nullptr: any stream, once `event`,
    // if any, has completed) and the event recorded then (nullptr: none yet).
    cudaStream_t stream = nullptr;
    cudaEvent_t event = nullptr;
  };
  struct Segment {
    char* base;
    size_t size;
    Block* first;  // the lowest block, which merging never deletes
  };
  // Free blocks by (stream, size, address): best fit within one stream is a
  // lower_bound.
  struct Order {
    bool operator()(const Block* a, const Block* b) const;
  };
  using FreeSet = std::set<Block*, Order>;

  FreeSet& pool_of(const Block* block) { return block->small ? small_ : large_; }
  Block* take_same_stream(FreeSet& pool, size_t size, cudaStream_t stream);
  Block* take_other_stream(FreeSet& pool, size_t size, cudaStream_t stream);
  bool idle(Block* block);
  Block* new_segment(size_t segment_size, bool small, size_t request);
  void split(Block* block, size_t size);
  void release_event(Block* block) noexcept;
  void release_free_segments();

  CudaDevice& device_;
  mutable std::mutex mutex_;
  FreeSet small_;
  FreeSet large_;
  std::vector<Segment*> segments_;
  Allocation empty_;  // every 0-byte request

  // The counters, kept as the ABI reports them (stats() copies them under the mutex).
  kiln_memory_stats stats_{sizeof(kiln_memory_stats), 0, 0, 0, 0, 0};
};

}  // namespace kiln::cuda

#endif  // KILN_CUDA_CACHING_ALLOCATOR_H
