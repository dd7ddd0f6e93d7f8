#include "host_allocator.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <new>

#include "kiln/sdk/status.h"

namespace kiln::cpu {

namespace {

constexpr int32_t kNumSmallClasses = 8;  // 64 .. 512 bytes
constexpr int kFirstOctave = 9;          // classes above 512 B start at 2^9
constexpr int32_t kLastClass =
    kNumSmallClasses + (std::countr_zero(HostAllocator::kLargeThreshold) - 1 - kFirstOctave) * 4 +
    3;
constexpr int32_t kLargeClass = -1;
constexpr int32_t kUncachedClass = -2;
constexpr int32_t kEmptyClass = -3;

// The pointer every 0-byte allocation gets: valid, aligned, never written.
alignas(HostAllocator::kAlignment) char empty_storage[HostAllocator::kAlignment];

size_t round_up(size_t value, size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

}  // namespace

int32_t HostAllocator::size_class_of(size_t bytes) {
  if (bytes > kLargeThreshold) return kLargeClass;
  if (bytes <= 512)
    return bytes == 0 ? 0 : static_cast<int32_t>((bytes + kAlignment - 1) / kAlignment) - 1;
  // 2^p < bytes <= 2^(p+1); classes 2^p * {1.25, 1.5, 1.75, 2}.
  const int p = std::bit_width(bytes - 1) - 1;
  const size_t quarter = size_t{1} << (p - 2);
  const size_t step = (bytes - (size_t{1} << p) + quarter - 1) / quarter;  // 1..4
  return kNumSmallClasses + (p - kFirstOctave) * 4 + static_cast<int32_t>(step) - 1;
}

size_t HostAllocator::class_size(int32_t size_class) {
  if (size_class < kNumSmallClasses) return static_cast<size_t>(size_class + 1) * kAlignment;
  const int p = kFirstOctave + (size_class - kNumSmallClasses) / 4;
  const size_t step = static_cast<size_t>((size_class - kNumSmallClasses) % 4) + 1;
  return (size_t{1} << p) + step * (size_t{1} << (p - 2));
}

HostAllocator::HostAllocator(uint64_t system_limit_bytes)
    : system_limit_(system_limit_bytes),
      free_lists_(static_cast<size_t>(kLastClass) + 1),
      blocks_per_class_(static_cast<size_t>(kLastClass) + 1, 0),
      empty_block_{this, empty_storage, 0, kEmptyClass, false} {
  static_assert(kLastClass == 75, "64 MiB large threshold gives 76 cached classes");
}

HostAllocator::~HostAllocator() {
  std::lock_guard lock(mutex_);
  release_cached_locked();
}

void* HostAllocator::system_alloc(size_t bytes, size_t alignment) {
  if (bytes <= system_limit_) {
    if (void* p = std::aligned_alloc(alignment, bytes)) return p;
    // The system is out of memory, but our cache may hold enough: give it back, retry.
    release_cached_locked();
    if (void* p = std::aligned_alloc(alignment, bytes)) return p;
  }
  return nullptr;
}

HostBlock* HostAllocator::allocate(size_t bytes, size_t alignment) {
  KILN_SDK_CHECK(alignment == 0 || std::has_single_bit(alignment), KILN_STATUS_INVALID_ARGUMENT,
                 "alignment ", alignment, " is not a power of two");
  std::lock_guard lock(mutex_);
  if (bytes == 0) {
    ++stats_.num_allocations;
    return &empty_block_;
  }
  auto out_of_memory = [&] {
    return sdk::Error(
        KILN_STATUS_OUT_OF_MEMORY,
        sdk::str_cat("out of memory: cannot allocate ", bytes, " bytes; ", stats_.bytes_in_use,
                     " bytes in use, ", stats_.bytes_reserved, " bytes reserved"));
  };

  int32_t size_class = kUncachedClass;
  size_t size = 0;
  if (alignment > kAlignment) {
    size = round_up(bytes, alignment);
    if (size < bytes) throw out_of_memory();
  } else {
    alignment = kAlignment;
    size_class = size_class_of(bytes);
    if (size_class == kLargeClass) {
      size = round_up(bytes, kLargeGranule);
      if (size < bytes) throw out_of_memory();  // wrapped around; never consult the cache
      // Reuse a cached large block when it wastes at most an eighth of the request.
      auto it = free_large_.lower_bound(size);
      if (it != free_large_.end() && it->first <= size + size / 8) {
        HostBlock* block = it->second;
        free_large_.erase(it);
        block->in_use = true;
        stats_.bytes_in_use += block->size;
        stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
        ++stats_.num_allocations;
        return block;
      }
    } else {
      auto& list = free_lists_[static_cast<size_t>(size_class)];
      if (!list.empty()) {  // the hot path: no system call, no page fault
        HostBlock* block = list.back();
        list.pop_back();
        block->in_use = true;
        stats_.bytes_in_use += block->size;
        stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
        ++stats_.num_allocations;
        return block;
      }
      size = class_size(size_class);
    }
  }

  void* data = system_alloc(size, alignment);
  if (data == nullptr) throw out_of_memory();
  return new_block(data, size, size_class);
}

HostBlock* HostAllocator::new_block(void* data, size_t size, int32_t size_class) {
  HostBlock* block = nullptr;
  try {
    block = new HostBlock{this, data, size, size_class, true};
    // Reserve free-list room for every block of the class now, so deallocate never
    // needs to allocate.
    if (size_class >= 0) {
      auto& list = free_lists_[static_cast<size_t>(size_class)];
      const size_t blocks = blocks_per_class_[static_cast<size_t>(size_class)] + 1;
      if (list.capacity() < blocks)
        list.reserve(std::max({blocks, 2 * list.capacity(), size_t{8}}));
      blocks_per_class_[static_cast<size_t>(size_class)] = blocks;
    }
  } catch (...) {
    std::free(data);
    delete block;
    throw;
  }
  stats_.bytes_reserved += size;
  ++stats_.num_system_allocations;
  stats_.bytes_in_use += size;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  ++stats_.num_allocations;
  return block;
}

void HostAllocator::deallocate(HostBlock* block) {
  KILN_SDK_CHECK(block != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null buffer");
  KILN_SDK_CHECK(block->owner == this, KILN_STATUS_INVALID_ARGUMENT,
                 "buffer belongs to another device");
  if (block->size_class == kEmptyClass) return;
  std::lock_guard lock(mutex_);
  KILN_SDK_CHECK(block->in_use, KILN_STATUS_INVALID_ARGUMENT, "buffer freed twice");
  block->in_use = false;
  stats_.bytes_in_use -= block->size;
  if (block->size_class >= 0) {
    // Cannot throw: allocate() reserved room for every block of this class.
    free_lists_[static_cast<size_t>(block->size_class)].push_back(block);
  } else if (block->size_class == kLargeClass) {
    try {
      free_large_.emplace(block->size, block);
    } catch (...) {  // no memory for the map node: give the block back instead
      stats_.bytes_reserved -= block->size;
      std::free(block->data);
      delete block;
    }
  } else {
    stats_.bytes_reserved -= block->size;
    std::free(block->data);
    delete block;
  }
}

void HostAllocator::release_cached_locked() {
  for (size_t c = 0; c < free_lists_.size(); ++c) {
    auto& list = free_lists_[c];
    blocks_per_class_[c] -= list.size();
    for (HostBlock* block : list) {
      stats_.bytes_reserved -= block->size;
      std::free(block->data);
      delete block;
    }
    list.clear();
  }
  for (auto& [size, block] : free_large_) {
    stats_.bytes_reserved -= size;
    std::free(block->data);
    delete block;
  }
  free_large_.clear();
}

void HostAllocator::empty_cache() {
  std::lock_guard lock(mutex_);
  release_cached_locked();
}

kiln_memory_stats HostAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace kiln::cpu
