// Errors only the GPU can see — an out-of-range index read from device memory — are
// reported as kiln::Error naming the op: at the next synchronization point normally,
// at the op itself under KILN_CUDA_SYNC=1 (the CudaSyncMode tests, registered with
// that variable set). Either way the device keeps working afterwards.
#include <cstdlib>
#include <string>

#include "cuda_test_util.h"
#include "support/kiln_test.h"

namespace kiln::test::cuda {
namespace {

bool sync_mode() {
  const char* value = std::getenv("KILN_CUDA_SYNC");
  return value != nullptr && std::string(value) == "1";
}

Tensor table() { return arange(0, 20, 1, TensorOptions().device(kCuda0)).reshape({5, 4}); }

Tensor indices(std::vector<int64_t> values) {
  const auto n = static_cast<int64_t>(values.size());
  return from_vector<int64_t>(values, {n}, TensorOptions().dtype(int64).device(kCuda0));
}

// The device still works, and the error is not reported a second time.
void expect_healthy() {
  Tensor y = index_select(table(), 0, indices({4, 0}));
  EXPECT_EQ(y.sum().item<double>(), (16 + 17 + 18 + 19) + (0 + 1 + 2 + 3));
}

TEST(CudaDeviceErrors, ABadIndexIsReportedAtTheNextSynchronization) {
  KILN_REQUIRE_CUDA();
  if (sync_mode()) GTEST_SKIP() << "KILN_CUDA_SYNC=1 reports it at the op instead";
  Tensor y = index_select(table(), 0, indices({1, 7, 2}));  // enqueued; nothing waits
  EXPECT_KILN_ERROR(synchronize(kCuda0), "kiln.index_select", "index 7", "size 5");
  expect_healthy();
  Tensor g = gather(table(), 1, indices({0, -1, 3, 2, 1}).reshape({5, 1}));
  EXPECT_KILN_ERROR(g.to_vector<int64_t>(), "kiln.gather", "index -1", "size 4");
  expect_healthy();
}

TEST(CudaSyncMode, ABadIndexIsReportedAtTheOp) {
  KILN_REQUIRE_CUDA();
  if (!sync_mode()) GTEST_SKIP() << "run with KILN_CUDA_SYNC=1 (ctest does)";
  EXPECT_KILN_ERROR(index_select(table(), 0, indices({1, 7, 2})), "kiln.index_select", "index 7",
                    "size 5", "KILN_CUDA_SYNC=1");
  expect_healthy();
}

TEST(CudaSyncMode, EveryOpWaitsForTheGpu) {
  KILN_REQUIRE_CUDA();
  if (!sync_mode()) GTEST_SKIP() << "run with KILN_CUDA_SYNC=1 (ctest does)";
  const Tensor x = ones({1000}, TensorOptions().device(kCuda0));
  const kiln_cuda_debug_counters before = counters();
  Tensor y = x + x;
  Tensor z = y * y;
  const kiln_cuda_debug_counters after = counters();
  EXPECT_EQ(after.host_synchronizations, before.host_synchronizations + 2);
  EXPECT_EQ(z.sum().item<double>(), 4000.0);
}

}  // namespace
}  // namespace kiln::test::cuda
