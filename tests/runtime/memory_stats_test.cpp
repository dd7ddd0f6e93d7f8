// Allocator statistics of cpu:0 as the frontend reports them.
#include "runtime/runtime_test_util.h"

namespace kiln {
namespace {

MemoryStats stats_now(const Device& d) {
  synchronize(d);  // frees may wait for enqueued work
  return memory_stats(d);
}

TEST(MemoryStats, InUseGrowsWithALiveTensorAndReturnsWhenItIsReleased) {
  const Device cpu("cpu", 0);
  constexpr uint64_t kBytes = 4u << 20;  // 1M float32
  auto round = [&](const MemoryStats& before) {
    auto t = zeros({1 << 20}, TensorOptions().device(cpu));
    const MemoryStats during = stats_now(cpu);
    EXPECT_GE(during.bytes_in_use, before.bytes_in_use + kBytes);
    EXPECT_GE(during.bytes_reserved, during.bytes_in_use);
    EXPECT_GE(during.peak_bytes_in_use, during.bytes_in_use);
    EXPECT_GT(during.num_allocations, before.num_allocations);
    EXPECT_EQ(t.sum().item<float>(), 0.0f);
  };
  round(stats_now(cpu));  // warm-up: anything the frontend creates once is created now
  const MemoryStats before = stats_now(cpu);
  round(before);
  const MemoryStats after = stats_now(cpu);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_GE(after.peak_bytes_in_use, before.bytes_in_use + kBytes);  // the high-water mark stays
}

TEST(MemoryStats, ViewsDoNotAllocate) {
  const Device cpu("cpu", 0);
  auto t = zeros({256, 256}, TensorOptions().device(cpu));
  const MemoryStats before = stats_now(cpu);
  auto v = t.t().slice(0, 0, 128).reshape({128, 256 / 2, 2}).select(2, 1);
  EXPECT_TRUE(v.shares_storage_with(t));
  const MemoryStats after = stats_now(cpu);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_EQ(after.num_allocations, before.num_allocations);
}

TEST(MemoryStats, StorageLivesAsLongAsItsLastView) {
  const Device cpu("cpu", 0);
  const MemoryStats before = stats_now(cpu);
  Tensor view;
  {
    auto base = ones({1 << 18}, TensorOptions().device(cpu));
    view = base.narrow(0, 10, 5);
  }
  EXPECT_GE(stats_now(cpu).bytes_in_use, before.bytes_in_use + (1u << 20));  // still held
  EXPECT_EQ(view.to_vector<float>(), std::vector<float>(5, 1.0f));
  view = Tensor();
  EXPECT_EQ(stats_now(cpu).bytes_in_use, before.bytes_in_use);
}

TEST(MemoryStats, EmptyCacheKeepsLiveMemory) {
  const Device cpu("cpu", 0);
  auto keep = ones({1000}, TensorOptions().device(cpu));
  { auto scratch = zeros({1 << 20}, TensorOptions().device(cpu)); }
  const MemoryStats before = stats_now(cpu);
  empty_cache(cpu);
  const MemoryStats after = stats_now(cpu);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_LE(after.bytes_reserved, before.bytes_reserved);
  EXPECT_GE(after.bytes_reserved, after.bytes_in_use);
  EXPECT_EQ(keep.sum().item<float>(), 1000.0f);
}

TEST(MemoryStats, OutOfMemorySaysWhereOnceAndLeavesTheDeviceUsable) {
  const Device cpu("cpu", 0);
  std::string message;
  try {
    empty({int64_t{1} << 40, 1 << 10}, TensorOptions().device(cpu));  // 4 PiB of float32
  } catch (const Error& e) {
    message = e.what();
  }
  ASSERT_FALSE(message.empty()) << "a 4 PiB allocation succeeded";
  const std::string where = "allocate on cpu:0";
  const size_t first = message.find(where);
  ASSERT_NE(first, std::string::npos) << message;
  EXPECT_EQ(message.find(where, first + 1), std::string::npos) << "said twice: " << message;
  EXPECT_NE(message.find("out of memory"), std::string::npos) << message;
  EXPECT_EQ(ones({3}, TensorOptions().device(cpu)).sum().item<float>(), 3.0f);
}

TEST(MemoryStats, UnknownDeviceThrows) {
  EXPECT_KILN_ERROR(memory_stats(Device("nosuch", 0)), "nosuch");
  EXPECT_KILN_ERROR(memory_stats(Device("cpu", 64)), "64");
}

}  // namespace
}  // namespace kiln
