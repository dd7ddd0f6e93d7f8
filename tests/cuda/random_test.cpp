// Philox on the GPU gives the CPU plugin's numbers: uniform numbers and dropout masks
// bit for bit; normal numbers to the last bit except where the device's float64
// log/cos differ from the host's in their last bit (OPS.md), which after rounding to
// float32 almost never shows.
#include <cstring>

#include <kiln/nn.h>
#include <kiln/optim.h>

#include "cuda_test_util.h"
#include "support/kiln_test.h"

namespace kiln::test::cuda {
namespace {

namespace F = kiln::nn::functional;

const Device kCpu("cpu", 0);

// `make(device)` twice from the same generator state, once per device.
template <class Make>
std::pair<Tensor, Tensor> on_both(uint64_t seed, const Make& make) {
  manual_seed(seed);
  Tensor gpu = make(kCuda0);
  manual_seed(seed);
  Tensor cpu = make(kCpu);
  return {gpu, cpu};
}

template <class T>
bool same_bits(const Tensor& a, const Tensor& b) {
  const std::vector<T> x = a.to_vector<T>();
  const std::vector<T> y = b.to_vector<T>();
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(T)) == 0;
}

TEST(CudaRandom, UniformIsBitIdenticalToTheCpu) {
  KILN_REQUIRE_CUDA();
  for (DType dtype : {float32, float64, float16, bfloat16}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    // An odd length: the last Philox block is partly used.
    auto [gpu, cpu] = on_both(11, [&](const Device& d) {
      return uniform({100003}, -3.0, 5.0, TensorOptions().dtype(dtype).device(d));
    });
    // Compared as float64 values: every dtype converts to it exactly.
    EXPECT_TRUE(same_bits<double>(gpu.to(float64), cpu.to(float64)));
  }
}

TEST(CudaRandom, DropoutMasksAreBitIdenticalToTheCpu) {
  KILN_REQUIRE_CUDA();
  manual_seed(3);
  const Tensor x_cpu = randn({64, 999}, TensorOptions().device(kCpu));
  const Tensor x_gpu = x_cpu.to(kCuda0);
  manual_seed(99);
  const Tensor y_gpu = F::dropout(x_gpu, 0.3, true);
  manual_seed(99);
  const Tensor y_cpu = F::dropout(x_cpu, 0.3, true);
  EXPECT_TRUE(same_bits<float>(y_gpu, y_cpu));
}

TEST(CudaRandom, NormalMatchesTheCpuToTheLastBitAlmostEverywhere) {
  KILN_REQUIRE_CUDA();
  auto [gpu, cpu] =
      on_both(17, [](const Device& d) { return randn({1 << 20}, TensorOptions().device(d)); });
  const std::vector<float> g = gpu.to_vector<float>();
  const std::vector<float> c = cpu.to_vector<float>();
  ASSERT_EQ(g.size(), c.size());
  size_t differ = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (g[i] == c[i]) continue;
    ++differ;
    EXPECT_LE(std::fabs(g[i] - c[i]), std::fabs(c[i]) * 1.2e-7f) << "element " << i;
  }
  EXPECT_LE(differ, g.size() / 10000) << differ << " of " << g.size() << " differ";
}

}  // namespace
}  // namespace kiln::test::cuda
