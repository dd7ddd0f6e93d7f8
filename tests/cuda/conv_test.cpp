// Convolutions on cuda:0 where the plugin has its own kernels besides cuDNN's: the
// weight gradient of a network's first layer (kernels/conv_wgrad_small.cu) and the
// bias add, against the CPU plugin in float64, and deterministic.
#include <kiln/nn.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cuda_test_util.h"
#include "support/kiln_test.h"

namespace kiln::test::cuda {
namespace {

namespace F = kiln::nn::functional;

struct ConvCase {
  int64_t n, c, o, hw, k, stride, pad, dilation, groups;
  DType dtype;
};

struct Grads {
  std::vector<double> y, w, b;
};

// y, grad_w and grad_b of conv2d(x, w, b) with upstream gradient g, on `device`.
Grads run(const ConvCase& k, const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& g,
          const Device& device, DType dtype) {
  Tensor xd = x.to(device).to(dtype);
  Tensor wd = w.to(device).to(dtype).requires_grad_();
  Tensor bd = b.to(device).to(dtype).requires_grad_();
  Tensor y = F::conv2d(xd, wd, bd, k.stride, k.pad, k.dilation, k.groups);
  y.backward(g.to(device).to(dtype));
  return {y.to(float64).to_vector<double>(), wd.grad().to(float64).to_vector<double>(),
          bd.grad().to(float64).to_vector<double>()};
}

// |a - ref| <= tol * max |ref| elementwise, the scale of a sum of many products.
::testing::AssertionResult close(const std::vector<double>& a, const std::vector<double>& ref,
                                 double tol) {
  if (a.size() != ref.size()) return ::testing::AssertionFailure() << "sizes differ";
  double scale = 1e-30;
  for (double r : ref) scale = std::max(scale, std::fabs(r));
  for (size_t i = 0; i < a.size(); ++i) {
    if (!(std::fabs(a[i] - ref[i]) <= tol * scale)) {
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a[i] << " vs " << ref[i] << " (scale " << scale << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(CudaConv, FirstLayerGradientsMatchTheCpuAndRepeatBitForBit) {
  KILN_REQUIRE_CUDA();
  const ConvCase cases[] = {
      {256, 1, 32, 28, 3, 1, 1, 1, 1, float32},  // kiln-train's first layer
      {7, 3, 16, 19, 3, 2, 0, 1, 1, float32},    // RGB, stride 2, no padding
      {5, 1, 8, 13, 5, 1, 2, 2, 1, float64},     // 5×5, dilation 2
      {4, 6, 8, 11, 3, 1, 1, 1, 2, float32},     // two groups of 3 channels: cuDNN's path
      {3, 3, 200, 9, 3, 1, 1, 1, 1, float32},    // many outputs: cuDNN's path
      {2, 2, 4, 8, 3, 1, 1, 1, 1, float64},      // 2 channels: cuDNN's path
  };
  for (const ConvCase& k : cases) {
    SCOPED_TRACE(::testing::Message()
                 << "n " << k.n << " c " << k.c << " o " << k.o << " hw " << k.hw << " k " << k.k
                 << " stride " << k.stride << " pad " << k.pad << " dilation " << k.dilation
                 << " groups " << k.groups << " " << k.dtype);
    manual_seed(11);
    const Tensor x = randn({k.n, k.c, k.hw, k.hw});
    const Tensor w = randn({k.o, k.c / k.groups, k.k, k.k});
    const Tensor b = randn({k.o});
    const int64_t ho = (k.hw + 2 * k.pad - k.dilation * (k.k - 1) - 1) / k.stride + 1;
    const Tensor g = randn({k.n, k.o, ho, ho});
    const Grads ref = run(k, x, w, b, g, Device("cpu", 0), float64);
    const Grads gpu = run(k, x, w, b, g, kCuda0, k.dtype);
    const double tol = k.dtype == float64 ? 1e-12 : 2e-5;
    EXPECT_TRUE(close(gpu.y, ref.y, tol));
    EXPECT_TRUE(close(gpu.w, ref.w, tol));
    EXPECT_TRUE(close(gpu.b, ref.b, tol));
    const Grads again = run(k, x, w, b, g, kCuda0, k.dtype);
    EXPECT_EQ(std::memcmp(again.w.data(), gpu.w.data(), gpu.w.size() * sizeof(double)), 0)
        << "the weight gradient changed between two identical runs";
  }
}

}  // namespace
}  // namespace kiln::test::cuda
