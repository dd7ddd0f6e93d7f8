// Reductions on the GPU are deterministic for a given shape (no floating-point
// atomics, a fixed reduction order), and agree with the CPU plugin within the
// tolerances of the conformance suite.
#include <cstring>

#include "cuda_test_util.h"
#include "support/kiln_test.h"

namespace kiln::test::cuda {
namespace {

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

TEST(CudaDeterminism, TheSameSumTwiceIsBitIdentical) {
  KILN_REQUIRE_CUDA();
  manual_seed(123);
  const Tensor x = randn({1 << 22}, TensorOptions().device(kCuda0));  // few outputs, long rows
  const Tensor m = randn({4096, 333}, TensorOptions().device(kCuda0));
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    EXPECT_TRUE(same_bits(x.sum().to_vector<float>(), x.sum().to_vector<float>()));
    EXPECT_TRUE(same_bits(m.sum({0}).to_vector<float>(), m.sum({0}).to_vector<float>()));
    EXPECT_TRUE(same_bits(m.sum({1}).to_vector<float>(), m.sum({1}).to_vector<float>()));
    EXPECT_TRUE(same_bits(m.var({0}).to_vector<float>(), m.var({0}).to_vector<float>()));
    EXPECT_TRUE(same_bits(m.argmax(1).to_vector<int64_t>(), m.argmax(1).to_vector<int64_t>()));
  }
}

TEST(CudaDeterminism, LongReductionsMatchTheCpu) {
  KILN_REQUIRE_CUDA();
  manual_seed(5);
  const Tensor x = randn({1000, 3000}, TensorOptions().device(kCuda0));
  const Tensor cpu_x = x.to(Device("cpu", 0));
  auto close = [](const Tensor& gpu, const Tensor& cpu) {
    const std::vector<double> g = gpu.to(float64).to_vector<double>();
    const std::vector<double> c = cpu.to(float64).to_vector<double>();
    if (g.size() != c.size()) return false;
    for (size_t i = 0; i < g.size(); ++i) {
      if (std::fabs(g[i] - c[i]) > 1e-5 + 1e-5 * std::fabs(c[i])) return false;
    }
    return true;
  };
  EXPECT_TRUE(close(x.sum(), cpu_x.sum()));
  EXPECT_TRUE(close(x.sum({0}), cpu_x.sum({0})));
  EXPECT_TRUE(close(x.mean({1}), cpu_x.mean({1})));
  EXPECT_TRUE(close(x.var({1}), cpu_x.var({1})));
  EXPECT_TRUE(close(x.amax({0}), cpu_x.amax({0})));
  EXPECT_EQ(x.argmin(1).to_vector<int64_t>(), cpu_x.argmin(1).to_vector<int64_t>());
  EXPECT_EQ(x.t().argmax(1).to_vector<int64_t>(), cpu_x.t().argmax(1).to_vector<int64_t>());
}

}  // namespace
}  // namespace kiln::test::cuda
