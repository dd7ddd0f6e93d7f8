// The device allocator through the frontend: reuse without new device allocations,
// statistics, splitting, empty_cache, and out-of-memory recovery. The CTest
// registrations run this file under each KILN_CUDA_ALLOCATOR; the expectations that
// only the caching allocator meets say so.
#include "cuda_test_util.h"
#include "support/kiln_test.h"

namespace kiln::test::cuda {
namespace {

TensorOptions on_cuda(DType dtype = float32) { return TensorOptions().dtype(dtype).device(kCuda0); }

// Forces the device open and waits for it, so statistics are taken from a quiet device.
void settle() { synchronize(kCuda0); }

TEST(CudaAllocator, FreedBlocksAreReused) {
  KILN_REQUIRE_CUDA();
  settle();
  const int64_t n = 1 << 18;  // 1 MiB of float32
  { Tensor warm = empty({n}, on_cuda()); }
  const MemoryStats before = memory_stats(kCuda0);
  for (int i = 0; i < 10; ++i) {
    Tensor t = empty({n}, on_cuda());
  }
  const MemoryStats after = memory_stats(kCuda0);
  EXPECT_EQ(after.num_allocations, before.num_allocations + 10);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  if (allocator_name() == "direct") {
    // The baseline mode: every allocation goes to cudaMalloc.
    EXPECT_EQ(after.num_system_allocations, before.num_system_allocations + 10);
  } else {
    EXPECT_EQ(after.num_system_allocations, before.num_system_allocations)
        << "a freed 1 MiB block was not reused by the " << allocator_name() << " allocator";
  }
}

TEST(CudaAllocator, StatisticsReturnToTheBaseline) {
  KILN_REQUIRE_CUDA();
  settle();
  const MemoryStats before = memory_stats(kCuda0);
  {
    std::vector<Tensor> live;
    for (int64_t n : {0, 1, 100, 4096, 1 << 17, 1 << 20, 3 << 20}) {
      live.push_back(empty({n}, on_cuda()));
    }
    const MemoryStats during = memory_stats(kCuda0);
    // 16.5 MiB requested in all (float32 elements).
    EXPECT_GE(during.bytes_in_use, before.bytes_in_use + (16u << 20));
    EXPECT_GE(during.peak_bytes_in_use, during.bytes_in_use);
    EXPECT_GE(during.bytes_reserved, during.bytes_in_use);
    EXPECT_EQ(during.num_allocations, before.num_allocations + 7);
  }
  const MemoryStats after = memory_stats(kCuda0);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_GE(after.peak_bytes_in_use, before.bytes_in_use + (16u << 20));
}

TEST(CudaAllocator, SmallBlocksShareSegmentsAndMergeBack) {
  KILN_REQUIRE_CUDA();
  if (allocator_name() != "caching") GTEST_SKIP() << "segments are the caching allocator's";
  settle();
  empty_cache(kCuda0);
  const MemoryStats before = memory_stats(kCuda0);
  uint64_t segments = 0;
  {
    // Three 600 KB requests fit one 2 MiB segment: at most one cudaMalloc.
    Tensor a = empty({150000}, on_cuda());
    Tensor b = empty({150000}, on_cuda());
    Tensor c = empty({150000}, on_cuda());
    segments = memory_stats(kCuda0).num_system_allocations - before.num_system_allocations;
    EXPECT_LE(segments, 1u);
  }
  // Freed and merged back with the rest of their segment: a 1 MiB request fits in it.
  { Tensor d = empty({1 << 18}, on_cuda()); }
  const MemoryStats after = memory_stats(kCuda0);
  EXPECT_EQ(after.num_system_allocations, before.num_system_allocations + segments);
  EXPECT_LE(after.bytes_reserved, before.bytes_reserved + (2u << 20));
}

TEST(CudaAllocator, EmptyCacheReturnsFreeMemory) {
  KILN_REQUIRE_CUDA();
  settle();
  { Tensor big = empty({16 << 20}, on_cuda()); }  // 64 MiB, freed into the cache
  const MemoryStats cached = memory_stats(kCuda0);
  empty_cache(kCuda0);
  const MemoryStats emptied = memory_stats(kCuda0);
  EXPECT_EQ(emptied.bytes_in_use, cached.bytes_in_use);
  if (allocator_name() != "direct") {
    EXPECT_LE(emptied.bytes_reserved + (64u << 20), cached.bytes_reserved);
  }
  EXPECT_EQ(emptied.bytes_reserved >= emptied.bytes_in_use, true);
}

TEST(CudaAllocator, OutOfMemoryIsAnErrorAndTheProcessGoesOn) {
  KILN_REQUIRE_CUDA();
  settle();
  const int64_t pebibyte_of_floats = int64_t{1} << 48;  // 1 PiB
  EXPECT_KILN_ERROR(empty({pebibyte_of_floats}, on_cuda()), "out of memory", "cuda:0",
                    "1125899906842624 bytes", "in use", "reserved");
  // Nothing is left behind: the device allocates and computes as before.
  Tensor x = full({1000}, 2.0, on_cuda());
  EXPECT_EQ((x * x).sum().item<double>(), 4000.0);
  EXPECT_EQ(memory_stats(kCuda0).bytes_in_use >= 4000u, true);
}

// A request the device could hold if it were empty, but not now: the allocator's
// real out-of-memory path (release what is cached, retry once, fail).
TEST(CudaAllocator, OutOfMemoryReleasesTheCacheAndRetries) {
  KILN_REQUIRE_CUDA();
  settle();
  { Tensor cached = empty({64 << 20}, on_cuda()); }  // 256 MiB, now cached (or pooled)
  const CudaPluginInfo p = cuda_plugin();
  ASSERT_FALSE(p.info.devices.empty());
  const uint64_t total = p.info.devices[0].total_memory_bytes;
  // All of the device but 64 MiB: more than is free once the CUDA context is up.
  const int64_t floats = static_cast<int64_t>((total - (64u << 20)) / 4);
  const MemoryStats before = memory_stats(kCuda0);
  EXPECT_KILN_ERROR(empty({floats}, on_cuda()), "out of memory",
                    std::to_string(floats * 4) + " bytes");
  const MemoryStats after = memory_stats(kCuda0);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  if (allocator_name() != "direct") {
    // The cached 256 MiB went back to the system before the retry.
    EXPECT_LE(after.bytes_reserved + (256u << 20), before.bytes_reserved);
  }
  Tensor x = ones({1 << 20}, on_cuda());
  EXPECT_EQ(x.sum().item<double>(), double(1 << 20));
}

}  // namespace
}  // namespace kiln::test::cuda
