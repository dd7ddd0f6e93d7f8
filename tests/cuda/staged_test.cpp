// The staged CUDA code (plugins/cuda/staged.cpp), run by ctest's cuda.staged with
// KILN_CUDA_STAGED=1: each entry's test, against the CPU plugin's answer (PyTorch 1.13's,
// tests/ops/pytorch_parity_test.cpp). Labelled gpu: skipped without a CUDA device. The
// first test checks that the switch is on, so these never pass with the staged code off.
#include <cmath>
#include <limits>

#include <kiln/nn.h>

#include "cuda_test_util.h"
#include "support/kiln_test.h"

namespace kiln::test::cuda {
namespace {

namespace F = kiln::nn::functional;
using indexing::Slice;

const Device kCpu("cpu", 0);
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Runs `fn` with fallbacks counted from zero and returns how many the CUDA device took.
template <class Fn>
uint64_t fallbacks_during(const Fn& fn) {
  reset_fallback_report();
  fn();
  uint64_t calls = 0;
  for (const FallbackEntry& e : fallback_report().entries)
    if (e.device == "cuda:0") calls += e.calls;
  return calls;
}

TEST(CudaStaged, EveryEntryIsSwitchedOn) {
  const CudaPluginInfo cuda = cuda_plugin();
  ASSERT_TRUE(cuda.found);
  ASSERT_FALSE(cuda.info.staged.empty());
  for (const StagedInfo& s : cuda.info.staged) EXPECT_TRUE(s.enabled) << s.name;
}

TEST(CudaStaged, IntegerPowIsExact) {
  KILN_REQUIRE_CUDA();
  for (DType dtype : {int64, int32, uint8}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    std::vector<int64_t> base, exponent;
    for (int64_t i = 0; i < 16; ++i) {
      base.push_back(dtype == uint8 ? i * 7 : i - 7);
      exponent.push_back(i % 5);
    }
    Tensor a = from_vector<int64_t>(base, {16}).to(dtype);
    Tensor b = from_vector<int64_t>(exponent, {16}).to(dtype);
    Tensor want = pow(a, b);  // the CPU plugin's, exact (PyTorch's values)
    Tensor got;
    EXPECT_EQ(fallbacks_during([&] { got = pow(a.to(kCuda0), b.to(kCuda0)).to(kCpu); }), 0u);
    EXPECT_EQ(got.dtype(), dtype);
    EXPECT_EQ(got.to(int64).to_vector<int64_t>(), want.to(int64).to_vector<int64_t>());
  }
  // 16777217 ** 2 in int64, exact (float32 rounded it by 33,554,433).
  Tensor big = full({1}, int64_t{16777217}, TensorOptions(int64).device(kCuda0));
  EXPECT_EQ(pow(big, int64_t{2}).to(kCpu).item<int64_t>(), int64_t{16777217} * 16777217);
}

TEST(CudaStaged, SoftmaxShiftsByAnInfiniteMax) {
  KILN_REQUIRE_CUDA();
  // A row holding +inf, one of only -inf, an ordinary one; rows long enough for the
  // block kernel too, and a strided (dim 0) case.
  for (int64_t d : {3, 2000}) {
    SCOPED_TRACE(d);
    Tensor x = randn({3, d}, TensorOptions(float32));
    x.index({0, 1}).fill_(kInf);
    x.index({1}).fill_(-kInf);
    for (bool log : {false, true}) {
      Tensor want = log ? F::log_softmax(x, 1) : F::softmax(x, 1);
      Tensor got = (log ? F::log_softmax(x.to(kCuda0), 1) : F::softmax(x.to(kCuda0), 1)).to(kCpu);
      EXPECT_TRUE(got.index({0}).isnan().all().item<bool>());
      EXPECT_TRUE(got.index({1}).isnan().all().item<bool>());
      EXPECT_TRUE(allclose(got.index({2}), want.index({2}), 1e-5, 1e-6));
    }
    Tensor strided = F::softmax(x.t().contiguous().to(kCuda0), 0).to(kCpu);
    EXPECT_TRUE(strided.index({Slice(), 0}).isnan().all().item<bool>());
  }
}

TEST(CudaStaged, MaxPoolTakesTheLastNaN) {
  KILN_REQUIRE_CUDA();
  // One 2 x 2 window holding two NaNs: the value is NaN and the index the last one (3),
  // as on the CPU and in PyTorch; the gradient goes there.
  Tensor x = from_vector<double>({kNaN, 1.0, 2.0, kNaN}, {1, 1, 2, 2}, TensorOptions(float32));
  Tensor xc = x.to(kCuda0).requires_grad_();
  Tensor y = F::max_pool2d(xc, {2, 2});
  EXPECT_TRUE(std::isnan(y.to(kCpu).item<float>()));
  y.sum().backward();
  EXPECT_EQ(xc.grad().to(kCpu).to_vector<float>(), (std::vector<float>{0, 0, 0, 1}));
}

}  // namespace
}  // namespace kiln::test::cuda
