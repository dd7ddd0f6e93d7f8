// The caching host allocator, through allocate / deallocate / memory_stats / empty_cache.
#include <cstring>
#include <thread>

#include "plugin_fixture.h"

namespace kiln::test {
namespace {

kiln_memory_stats stats() {
  CpuPlugin& p = CpuPlugin::get();
  kiln_memory_stats s{};
  s.struct_size = sizeof(s);
  EXPECT_TRUE(take(p.api->memory_stats(p.device, &s)).ok());
  return s;
}

struct Allocation {
  kiln_buffer* buffer = nullptr;
  void* data = nullptr;
};

Allocation allocate(size_t bytes, size_t alignment = 64) {
  CpuPlugin& p = CpuPlugin::get();
  Allocation a;
  const Outcome o = take(p.api->allocate(p.device, bytes, alignment, nullptr, &a.buffer, &a.data));
  EXPECT_TRUE(o.ok()) << o.message;
  return a;
}

void release(const Allocation& a) {
  CpuPlugin& p = CpuPlugin::get();
  KILN_EXPECT_OK(p.api->deallocate(p.device, a.buffer, nullptr));
}

TEST(HostAllocator, StatsReturnToZeroInUse) {
  const kiln_memory_stats before = stats();
  EXPECT_EQ(before.struct_size, sizeof(kiln_memory_stats));
  std::vector<Allocation> live;
  for (size_t bytes : {1u, 100u, 4096u, 100000u, 3000000u}) live.push_back(allocate(bytes));
  const kiln_memory_stats during = stats();
  EXPECT_GE(during.bytes_in_use, before.bytes_in_use + 1 + 100 + 4096 + 100000 + 3000000);
  EXPECT_GE(during.bytes_reserved, during.bytes_in_use);
  EXPECT_GE(during.peak_bytes_in_use, during.bytes_in_use);
  EXPECT_EQ(during.num_allocations, before.num_allocations + 5);
  for (const Allocation& a : live) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data) % 64, 0u);
    std::memset(a.data, 0x5A, 1);  // usable memory
    release(a);
  }
  const kiln_memory_stats after = stats();
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_GE(after.bytes_reserved, during.bytes_in_use - before.bytes_in_use)
      << "freed blocks stay cached";
}

TEST(HostAllocator, CachedBlocksAreReusedWithoutTheSystem) {
  const Allocation warm = allocate(48000);
  release(warm);
  const kiln_memory_stats before = stats();
  // 48000..48099 all round up to the same class (40960 < n <= 49152).
  for (int i = 0; i < 100; ++i) release(allocate(48000 + static_cast<size_t>(i)));
  const kiln_memory_stats after = stats();
  EXPECT_EQ(after.num_system_allocations, before.num_system_allocations);
  EXPECT_EQ(after.num_allocations, before.num_allocations + 100);
}

TEST(HostAllocator, ZeroBytesIsValid) {
  const kiln_memory_stats before = stats();
  const Allocation a = allocate(0);
  EXPECT_NE(a.buffer, nullptr);
  EXPECT_NE(a.data, nullptr);
  EXPECT_EQ(stats().bytes_in_use, before.bytes_in_use);
  release(a);
  EXPECT_EQ(stats().num_allocations, before.num_allocations + 1);
}

TEST(HostAllocator, HonoursLargeAlignments) {
  const Allocation a = allocate(1000, 4096);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data) % 4096, 0u);
  release(a);
  CpuPlugin& p = CpuPlugin::get();
  kiln_buffer* buffer = nullptr;
  void* data = nullptr;
  EXPECT_EQ(take(p.api->allocate(p.device, 64, 48, nullptr, &buffer, &data)).code,
            KILN_STATUS_INVALID_ARGUMENT)
      << "alignment must be a power of two";
}

TEST(HostAllocator, EmptyCacheReleasesCachedBlocks) {
  CpuPlugin& p = CpuPlugin::get();
  release(allocate(1 << 20));
  release(allocate(100 << 20));  // a large block, cached by size
  EXPECT_GE(stats().bytes_reserved, (101u << 20));
  KILN_ASSERT_OK(p.api->empty_cache(p.device));
  const kiln_memory_stats s = stats();
  EXPECT_EQ(s.bytes_reserved, s.bytes_in_use);
}

TEST(HostAllocator, LargeBlocksAreReusedBySize) {
  release(allocate(80 << 20));
  const kiln_memory_stats before = stats();
  release(allocate((80 << 20) - 12345));  // rounds to the same 2 MiB multiple
  EXPECT_EQ(stats().num_system_allocations, before.num_system_allocations);
}

TEST(HostAllocator, OutOfMemoryStatesTheNumbers) {
  CpuPlugin& p = CpuPlugin::get();
  kiln_buffer* buffer = nullptr;
  void* data = nullptr;
  const size_t huge = size_t{1} << 60;
  const Outcome o = take(p.api->allocate(p.device, huge, 64, nullptr, &buffer, &data));
  EXPECT_EQ(o.code, KILN_STATUS_OUT_OF_MEMORY);
  EXPECT_NE(o.message.find(std::to_string(huge)), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("in use"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("reserved"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("cpu:0"), std::string::npos) << o.message;
}

TEST(HostAllocator, DoubleFreeIsReported) {
  CpuPlugin& p = CpuPlugin::get();
  const Allocation a = allocate(256);
  release(a);
  EXPECT_EQ(take(p.api->deallocate(p.device, a.buffer, nullptr)).code,
            KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(take(p.api->deallocate(p.device, nullptr, nullptr)).code, KILN_STATUS_INVALID_ARGUMENT);
}

TEST(HostAllocator, OlderStatsStructGetsOnlyItsFields) {
  CpuPlugin& p = CpuPlugin::get();
  kiln_memory_stats s;
  std::memset(&s, 0xCD, sizeof s);
  s.struct_size = offsetof(kiln_memory_stats, peak_bytes_in_use);
  KILN_ASSERT_OK(p.api->memory_stats(p.device, &s));
  uint64_t untouched;
  std::memset(&untouched, 0xCD, sizeof untouched);
  EXPECT_EQ(s.peak_bytes_in_use, untouched);
  EXPECT_EQ(s.num_system_allocations, untouched);
  EXPECT_NE(s.bytes_reserved, untouched);
}

TEST(HostAllocator, ConcurrentUseKeepsTheBooksStraight) {
  const kiln_memory_stats before = stats();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      std::vector<Allocation> mine;
      for (int i = 0; i < 500; ++i) {
        mine.push_back(allocate(static_cast<size_t>(64 * (1 + (i * 7 + t) % 300))));
        if (mine.size() > 8) {
          release(mine.front());
          mine.erase(mine.begin());
        }
      }
      for (const Allocation& a : mine) release(a);
    });
  }
  for (auto& t : threads) t.join();
  const kiln_memory_stats after = stats();
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_EQ(after.num_allocations, before.num_allocations + 4 * 500);
}

}  // namespace
}  // namespace kiln::test
