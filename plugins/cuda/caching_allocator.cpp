#include "caching_allocator.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <new>

#include "device.h"
#include "kiln/sdk/status.h"

namespace kiln::cuda {

bool CachingAllocator::Order::operator()(const Block* a, const Block* b) const {
  const auto sa = reinterpret_cast<uintptr_t>(a->stream);
  const auto sb = reinterpret_cast<uintptr_t>(b->stream);
  if (sa != sb) return sa < sb;
  if (a->block_size != b->block_size) return a->block_size < b->block_size;
  return reinterpret_cast<uintptr_t>(a->ptr) < reinterpret_cast<uintptr_t>(b->ptr);
}

CachingAllocator::CachingAllocator(CudaDevice& device) : device_(device) {
  empty_.owner = this;
  empty_.in_use = true;  // forever: releasing it is a no-op, never a double free
  empty_.data = device.empty_allocation();
}

Allocation* CachingAllocator::allocate(size_t bytes, size_t alignment, cudaStream_t stream) {
  // Segments from cudaMalloc are 256-byte aligned and blocks start at multiples of
  // 512 bytes into them, so every block is 256-byte aligned; larger alignments pad.
  const size_t padded = padded_request(device_, name(), bytes, alignment, CudaDevice::kAlignment);
  alignment = std::max<size_t>(alignment, CudaDevice::kAlignment);
  std::lock_guard lock(mutex_);
  if (bytes == 0) {
    ++stats_.num_allocations;
    return &empty_;
  }
  const bool small = padded <= kSmallLimit;
  const size_t size = round_up(padded, small ? kBlockRounding : kLargeRounding);
  // Rounding overflowed, or more than the whole device: fail without asking CUDA.
  if (size == 0 || size > device_.properties().totalGlobalMem) {
    throw_out_of_memory(device_, name(), bytes, stats_.bytes_in_use, stats_.bytes_reserved);
  }
  device_.make_current();
  FreeSet& pool = small ? small_ : large_;
  Block* block = take_same_stream(pool, size, stream);
  if (block == nullptr) block = take_other_stream(pool, size, stream);
  if (block == nullptr) block = new_segment(small ? kSmallSegment : size, small, bytes);
  split(block, size);
  block->in_use = true;
  block->stream = stream;
  block->size = block->block_size;
  block->data =
      reinterpret_cast<void*>(round_up(reinterpret_cast<uintptr_t>(block->ptr), alignment));
  stats_.bytes_in_use += block->block_size;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  ++stats_.num_allocations;
  return block;
}

CachingAllocator::Block* CachingAllocator::take_same_stream(FreeSet& pool, size_t size,
                                                            cudaStream_t stream) {
  Block key;
  key.stream = stream;
  key.block_size = size;
  auto it = pool.lower_bound(&key);
  if (it == pool.end() || (*it)->stream != stream) return nullptr;
  Block* block = *it;
  pool.erase(it);
  return block;
}

// Blocks released on other streams, reusable once their work is done. Looks at a few
// of the smallest fitting blocks of each other stream: those whose event has not
// completed are skipped (never waited for), and a cudaMalloc is cheaper than an
// unbounded scan.
CachingAllocator::Block* CachingAllocator::take_other_stream(FreeSet& pool, size_t size,
                                                             cudaStream_t stream) {
  constexpr int kTriesPerStream = 4;
  auto it = pool.begin();
  while (it != pool.end()) {
    const cudaStream_t other = (*it)->stream;
    Block group_end;
    group_end.stream = other;
    group_end.block_size = std::numeric_limits<size_t>::max();
    group_end.ptr = reinterpret_cast<char*>(std::numeric_limits<uintptr_t>::max());
    if (other != stream) {
      Block key;
      key.stream = other;
      key.block_size = size;
      int tries = 0;
      for (auto c = pool.lower_bound(&key);
           c != pool.end() && (*c)->stream == other && tries < kTriesPerStream; ++c, ++tries) {
        Block* block = *c;
        if (!idle(block)) continue;
        pool.erase(c);
        // Its last use is over, so the whole block (and any remainder split off it) is
        // free for every stream.
        release_event(block);
        block->stream = nullptr;
        return block;
      }
    }
    it = pool.upper_bound(&group_end);
  }
  return nullptr;
}

// True when no work enqueued before the block was released can still touch it.
bool CachingAllocator::idle(Block* block) {
  if (block->event == nullptr) {
    if (block->stream == nullptr) return true;
    // Released while the device had no other stream: record the event now. It covers
    // more work than one recorded at release time would, never less.
    block->event = device_.events().get();
    try {
      device_.record_cuda_event(block->event, block->stream, "recording a reuse event");
    } catch (...) {
      release_event(block);
      throw;
    }
  }
  return device_.event_done(block->event);
}

CachingAllocator::Block* CachingAllocator::new_segment(size_t segment_size, bool small,
                                                       size_t request) {
  void* memory = nullptr;
  cudaError_t status = cudaMalloc(&memory, segment_size);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: clear it, or the next op would report it
    release_free_segments();
    status = cudaMalloc(&memory, segment_size);
  }
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw_out_of_memory(device_, name(), request, stats_.bytes_in_use, stats_.bytes_reserved);
  }
  if (status != cudaSuccess) device_.fail(status, "cudaMalloc");
  Segment* segment = nullptr;
  Block* block = nullptr;
  try {
    segment = new Segment{static_cast<char*>(memory), segment_size, nullptr};
    block = new Block;
    segments_.push_back(segment);
  } catch (...) {
    delete segment;
    delete block;
    cudaFree(memory);
    throw;
  }
  block->owner = this;
  block->ptr = segment->base;
  block->block_size = segment_size;
  block->segment = segment;
  block->small = small;
  segment->first = block;
  stats_.bytes_reserved += segment_size;
  ++stats_.num_system_allocations;
  return block;
}

// Splits the tail off `block` (not in any pool) when it makes a whole block; the tail
// inherits the block's stream tag and event and goes back to the pool.
void CachingAllocator::split(Block* block, size_t size) {
  const size_t rest = block->block_size - size;
  if (rest < (block->small ? kBlockRounding : kLargeRounding)) return;
  auto* tail = new (std::nothrow) Block;
  if (tail == nullptr) return;  // no host memory: hand out the whole block instead
  tail->owner = this;
  tail->ptr = block->ptr + size;
  tail->block_size = rest;
  tail->segment = block->segment;
  tail->small = block->small;
  tail->prev = block;
  tail->next = block->next;
  tail->stream = block->stream;
  tail->event = block->event;
  block->event = nullptr;
  if (block->next != nullptr) block->next->prev = tail;
  block->next = tail;
  block->block_size = size;
  try {
    pool_of(tail).insert(tail);
  } catch (...) {  // no memory for the set node: keep the tail inside the block
    block->next = tail->next;
    if (tail->next != nullptr) tail->next->prev = block;
    block->block_size += rest;
    release_event(tail);
    delete tail;
  }
}

void CachingAllocator::deallocate(Allocation* allocation, cudaStream_t stream) {
  std::lock_guard lock(mutex_);
  KILN_SDK_CHECK(allocation != nullptr && allocation->owner == this, KILN_STATUS_INVALID_ARGUMENT,
                 "buffer does not belong to ", device_.label());
  if (allocation == &empty_) return;
  KILN_SDK_CHECK(allocation->in_use, KILN_STATUS_INVALID_ARGUMENT, "buffer released twice");
  auto* block = static_cast<Block*>(allocation);
  cudaEvent_t event = nullptr;
  if (device_.user_streams().load(std::memory_order_relaxed) > 0) {
    // Another stream may want this block before `stream` has finished with it.
    device_.make_current();
    event = device_.events().get();
    try {
      device_.record_cuda_event(event, stream, "recording a release event");
    } catch (...) {
      device_.events().put(event);
      throw;
    }
  }
  block->in_use = false;
  block->stream = stream;
  block->event = event;
  stats_.bytes_in_use -= block->block_size;

  // Merge with free neighbours released on the same stream. The survivor is the lower
  // block (so a segment's first block is never deleted) and keeps the newest event,
  // this release's, which covers the neighbours' older work on the same stream.
  FreeSet& pool = pool_of(block);
  if (Block* prev = block->prev; prev != nullptr && !prev->in_use && prev->stream == stream) {
    pool.erase(prev);
    release_event(prev);
    prev->block_size += block->block_size;
    prev->next = block->next;
    if (block->next != nullptr) block->next->prev = prev;
    prev->event = block->event;
    delete block;
    block = prev;
  }
  if (Block* next = block->next; next != nullptr && !next->in_use && next->stream == stream) {
    pool.erase(next);
    release_event(next);
    block->block_size += next->block_size;
    block->next = next->next;
    if (next->next != nullptr) next->next->prev = block;
    delete next;
  }
  try {
    pool.insert(block);
  } catch (...) {
    // No memory for the set node: the block stays out of the cache (still reserved,
    // never reused) rather than failing a release the caller cannot retry.
  }
}

void CachingAllocator::release_event(Block* block) noexcept {
  device_.events().put(block->event);
  block->event = nullptr;
}

// Frees every segment no allocation holds. Waits for the device first: a block freed
// on a stream may still be read by work enqueued before the free. After that wait
// every free block is idle, so a segment whose blocks are all free goes back even when
// its blocks were released on different streams (and so were never merged).
void CachingAllocator::release_free_segments() {
  device_.wait_device("releasing cached device memory");
  std::vector<Segment*> kept;
  kept.reserve(segments_.size());
  for (Segment* segment : segments_) {
    bool all_free = true;
    for (Block* b = segment->first; b != nullptr && all_free; b = b->next) all_free = !b->in_use;
    if (!all_free) {
      kept.push_back(segment);
      continue;
    }
    for (Block* b = segment->first; b != nullptr;) {
      Block* next = b->next;
      pool_of(b).erase(b);
      release_event(b);
      delete b;
      b = next;
    }
    cudaFree(segment->base);
    cudaGetLastError();  // a failure here leaves the memory with the driver; keep going
    stats_.bytes_reserved -= segment->size;
    delete segment;
  }
  segments_.swap(kept);
}

void CachingAllocator::empty_cache() {
  std::lock_guard lock(mutex_);
  device_.make_current();
  release_free_segments();
}

void CachingAllocator::retag_stream(cudaStream_t stream, cudaStream_t to) {
  std::lock_guard lock(mutex_);
  for (FreeSet* pool : {&small_, &large_}) {
    std::vector<Block*> moved;
    for (Block* block : *pool) {
      if (block->stream == stream) moved.push_back(block);
    }
    for (Block* block : moved) {
      pool->erase(block);
      block->stream = to;
      pool->insert(block);
    }
  }
}

kiln_memory_stats CachingAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace kiln::cuda
