// Creation ops, dtype conversion, random numbers and copies across devices, on every
// device. Random numbers must be bit-identical on every backend (api/OPS.md).
#include "ops/conformance.h"
#include "support/philox.h"

namespace kiln::test {
namespace {

class CreationCopy : public DeviceTest {};

TEST_P(CreationCopy, FilledTensorsLiveOnTheDevice) {
  for (DType dtype : {float32, float64, float16, bfloat16, int32, int64, uint8, kbool}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto z = zeros({2, 3}, opts(dtype));
    EXPECT_EQ(z.device(), device());
    EXPECT_EQ(z.dtype(), dtype);
    EXPECT_TRUE(matches(z, Ref::filled({2, 3}, 0), kExact));
    EXPECT_TRUE(matches(ones({4}, opts(dtype)), Ref::filled({4}, 1), kExact));
    const double value = dtype == kbool ? 1 : dtype == uint8 ? 200 : -3;
    EXPECT_TRUE(matches(full({3, 1}, value, opts(dtype)), Ref::filled({3, 1}, value), kExact));
  }
  EXPECT_TRUE(matches(full({2}, 0.1, opts(float64)), {2}, {0.1, 0.1}));  // no float32 detour
  EXPECT_EQ(full({}, 2.5, opts()).item<float>(), 2.5f);
}

TEST_P(CreationCopy, FillThroughAStridedView) {
  auto base = zeros({4, 4}, opts());
  base.slice(0, 0, 4, 2).slice(1, 1, 4, 2).fill_(7);  // rows 0, 2; columns 1, 3
  EXPECT_TRUE(matches(base, {4, 4}, {0, 7, 0, 7, 0, 0, 0, 0, 0, 7, 0, 7, 0, 0, 0, 0}));
  auto d = zeros({3, 2}, opts(float64));
  d.t().select(0, 1).fill_(-1.5);  // column 1
  EXPECT_TRUE(matches(d, {3, 2}, {0, -1.5, 0, -1.5, 0, -1.5}));
  base.zero_();
  EXPECT_TRUE(matches(base, Ref::filled({4, 4}, 0), kExact));
}

TEST_P(CreationCopy, ArangeAndLinspace) {
  auto a = arange(0, 10, 3, opts(int64));
  EXPECT_EQ(a.device(), device());
  EXPECT_EQ(a.to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_TRUE(matches(arange(1.0, 2.0, 0.25, opts()), {4}, {1, 1.25, 1.5, 1.75}));
  EXPECT_TRUE(matches(arange(5, 0, -2, opts(float64)), {3}, {5, 3, 1}));
  auto l = linspace(-1, 1, 5, opts());
  EXPECT_EQ(l.device(), device());
  EXPECT_TRUE(matches(l, {5}, {-1, -0.5, 0, 0.5, 1}));
  auto e = linspace(0.1, 0.9, 7, opts(float64)).to_vector<double>();
  EXPECT_EQ(e.front(), 0.1);
  EXPECT_EQ(e.back(), 0.9);
}

TEST_P(CreationCopy, RandomNumbersAreBitIdenticalWithTheReference) {
  manual_seed(2024);
  auto u = rand({13}, opts()).to_vector<float>();
  for (uint64_t i = 0; i < u.size(); ++i) EXPECT_EQ(u[i], philox_uniform_float32(2024, 0, i)) << i;
  manual_seed(2024);
  auto d = rand({5}, opts(float64)).to_vector<double>();
  for (uint64_t i = 0; i < d.size(); ++i) EXPECT_EQ(d[i], philox_uniform_float64(2024, 0, i)) << i;
  manual_seed(2024);
  auto n = randn({9}, opts(float64)).to_vector<double>();
  for (uint64_t i = 0; i < n.size(); ++i) EXPECT_NEAR(n[i], philox_normal(2024, 0, i), 1e-12) << i;
}

TEST_P(CreationCopy, RandomNumbersAgreeWithCpu0) {
  manual_seed(77);
  auto here = randn({3, 5}, opts()).to_vector<float>();
  manual_seed(77);
  auto cpu = randn({3, 5}, TensorOptions().device("cpu:0")).to_vector<float>();
  EXPECT_EQ(here, cpu);
  manual_seed(78);
  auto uh = uniform({6}, -1, 3, opts(float16)).to_vector<float>();
  manual_seed(78);
  EXPECT_EQ(uh,
            uniform({6}, -1, 3, TensorOptions().dtype(float16).device("cpu:0")).to_vector<float>());
}

TEST_P(CreationCopy, ToDTypeOnTheDevice) {
  auto x = make({-1.7, -0.5, 0.5, 2.5, 1000.6}, {5});
  auto i = x.to(int32);
  EXPECT_EQ(i.device(), device());
  EXPECT_EQ(i.to_vector<int32_t>(), (std::vector<int32_t>{-1, 0, 0, 2, 1000}));
  EXPECT_EQ(x.to(kbool).to_vector<bool>(), (std::vector<bool>{true, true, true, true, true}));
  auto h = make({1.0 + 0x1p-11, 1.0 + 3 * 0x1p-11, 65520, 0.1}, {4}).to(float16);
  EXPECT_EQ(h.device(), device());
  EXPECT_EQ(h.to(float32).to_vector<double>(),
            (std::vector<double>{1.0, 1.0 + 0x1p-9, std::numeric_limits<double>::infinity(),
                                 0x1.998p-4}));
  auto b = make({1.0 + 0x1p-8, 257, 0.1}, {3}).to(bfloat16);
  EXPECT_EQ(b.to(float64).to_vector<double>(), (std::vector<double>{1.0, 256, 0x1.9ap-4}));
  auto t = make({1, 2, 3, 4, 5, 6}, {2, 3}, float32, Layout::Transposed).to(int64);
  EXPECT_EQ(t.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
}

TEST_P(CreationCopy, ToAnotherDeviceAndBack) {
  auto x = random({3, 4}, 1);
  EXPECT_TRUE(x.to(device()).shares_storage_with(x));  // already there: the same tensor
  for (const Device& other : other_devices()) {
    SCOPED_TRACE("to " + other.str());
    auto y = x.to(other);
    EXPECT_EQ(y.device(), other);
    EXPECT_TRUE(matches(y, ref_of(x), kExact));
    auto back = y.to(device());
    EXPECT_EQ(back.device(), device());
    EXPECT_TRUE(matches(back, ref_of(x), kExact));
    auto view = x.t().slice(0, 1, 4, 2).to(other);  // a non-contiguous view moves as its values
    EXPECT_TRUE(matches(view, ref_of(x.t().slice(0, 1, 4, 2)), kExact));
  }
}

TEST_P(CreationCopy, CopyFromEveryDeviceIntoViews) {
  for (const Device& other : other_devices()) {
    SCOPED_TRACE("from " + other.str());
    auto dst = zeros({3, 4}, opts());
    auto src = from_vector<double>({1, 2, 3}, {3}, TensorOptions().dtype(int32).device(other));
    dst.t().select(0, 2).copy_(src);  // column 2 of dst, from another device, int32 -> float32
    EXPECT_EQ(dst.device(), device());
    EXPECT_TRUE(matches(dst, {3, 4}, {0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0}));
    auto back = zeros({2, 3}, TensorOptions().dtype(float64).device(other));
    back.copy_(dst.narrow(1, 1, 2).t().slice(1, 0, 3).narrow(0, 0, 2));  // [2, 3] view of dst
    EXPECT_TRUE(matches(back, {2, 3}, {0, 0, 0, 1, 2, 3}));
    // Broadcasting across devices: a row copied into every row.
    auto wide = zeros({2, 3}, TensorOptions().device(other));
    wide.copy_(make({7, 8, 9}, {3}));
    EXPECT_TRUE(matches(wide, {2, 3}, {7, 8, 9, 7, 8, 9}));
  }
}

TEST_P(CreationCopy, CopyWithinTheDevice) {
  auto src = random({2, 3}, 2, float32, Layout::Transposed);
  auto dst = empty({2, 3}, opts(float64));
  dst.copy_(src);
  EXPECT_TRUE(matches(dst, ref_of(src), kExact));
  auto h = zeros({2, 3}, opts(float16));
  h.copy_(make({0.5, 1.5, -2, 4, 8, 16}, {2, 3}, float64));
  EXPECT_TRUE(matches(h, {2, 3}, {0.5, 1.5, -2, 4, 8, 16}));
  auto e = zeros({0, 3}, opts());
  e.copy_(zeros({3}, opts()));
  EXPECT_EQ(e.numel(), 0);
}

KILN_INSTANTIATE_FOR_EVERY_DEVICE(CreationCopy);

}  // namespace
}  // namespace kiln::test
