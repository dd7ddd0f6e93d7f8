// conv2d and max_pool2d, forward and backward, through kiln::nn::functional against
// naive float64 references on the host. The shapes are chosen to reach every path of
// the CPU kernels: output positions split into several blocks (large planes), a
// batch smaller than the thread pool, more samples than partial weight gradients,
// groups, strides, dilation, padding wider than the kernel's reach, the 1x1 direct
// path, and max pooling's 2x2 fast path next to its general one (odd sizes, NaN,
// ties, padding, dilation).

#include <gtest/gtest.h>

#include <kiln/kiln.h>
#include <kiln/nn.h>

#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <string>

namespace {

namespace F = kiln::nn::functional;
using kiln::Tensor;

struct ConvCase {
  int64_t n, c, h, w, o, kh, kw;
  int64_t sh, sw, ph, pw, dh, dw, groups;
  int64_t ho() const { return (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1; }
  int64_t wo() const { return (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1; }
  std::string str() const {
    std::ostringstream s;
    s << "x[" << n << "," << c << "," << h << "," << w << "] w[" << o << "," << c / groups << ","
      << kh << "," << kw << "] stride (" << sh << "," << sw << ") pad (" << ph << "," << pw
      << ") dil (" << dh << "," << dw << ") groups " << groups;
    return s.str();
  }
};

std::vector<double> values(size_t count, uint64_t seed) {
  std::vector<double> v(count);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (double& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<double>((s >> 33) % 2001) / 1000.0 - 1.0;  // [-1, 1] in steps of 1e-3
  }
  return v;
}

struct ConvReference {
  std::vector<double> y, grad_x, grad_w, grad_b;
};

ConvReference reference_conv(const ConvCase& k, const std::vector<double>& x,
                             const std::vector<double>& w, const std::vector<double>& b,
                             const std::vector<double>& g) {
  const int64_t cg = k.c / k.groups, og = k.o / k.groups, ho = k.ho(), wo = k.wo();
  ConvReference r;
  r.y.assign(static_cast<size_t>(k.n * k.o * ho * wo), 0.0);
  r.grad_x.assign(x.size(), 0.0);
  r.grad_w.assign(w.size(), 0.0);
  r.grad_b.assign(static_cast<size_t>(k.o), 0.0);
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t o = 0; o < k.o; ++o)
      for (int64_t oh = 0; oh < ho; ++oh)
        for (int64_t ow = 0; ow < wo; ++ow) {
          const size_t yi = static_cast<size_t>(((n * k.o + o) * ho + oh) * wo + ow);
          double acc = b[static_cast<size_t>(o)];
          const double gy = g[yi];
          r.grad_b[static_cast<size_t>(o)] += gy;
          const int64_t grp = o / og;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t i = 0; i < k.kh; ++i)
              for (int64_t j = 0; j < k.kw; ++j) {
                const int64_t ih = oh * k.sh - k.ph + i * k.dh, iw = ow * k.sw - k.pw + j * k.dw;
                if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w) continue;
                const int64_t c = grp * cg + ci;
                const size_t xi = static_cast<size_t>(((n * k.c + c) * k.h + ih) * k.w + iw);
                const size_t wi = static_cast<size_t>(((o * cg + ci) * k.kh + i) * k.kw + j);
                acc += x[xi] * w[wi];
                r.grad_x[xi] += gy * w[wi];
                r.grad_w[wi] += gy * x[xi];
              }
          r.y[yi] = acc;
        }
  return r;
}

::testing::AssertionResult close(const Tensor& t, const std::vector<double>& expected, double tol) {
  const std::vector<double> got = t.to_vector<double>();
  if (got.size() != expected.size())
    return ::testing::AssertionFailure() << got.size() << " values, expected " << expected.size();
  int bad = 0;
  std::ostringstream detail;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool ok = std::isnan(expected[i])
                        ? std::isnan(got[i])
                        : got[i] == expected[i] ||  // infinities
                              std::abs(got[i] - expected[i]) <= tol * (1 + std::abs(expected[i]));
    if (!ok && bad++ < 5)
      detail << "\n  [" << i << "] got " << got[i] << ", expected " << expected[i];
  }
  if (bad)
    return ::testing::AssertionFailure()
           << bad << " of " << got.size() << " differ" << detail.str();
  return ::testing::AssertionSuccess();
}

void check_conv(const ConvCase& k, kiln::DType dtype, double tol) {
  SCOPED_TRACE(k.str() + " " + std::string(kiln::dtype_name(dtype)));
  const int64_t cg = k.c / k.groups;
  const auto x = values(static_cast<size_t>(k.n * k.c * k.h * k.w), 1);
  const auto w = values(static_cast<size_t>(k.o * cg * k.kh * k.kw), 2);
  const auto b = values(static_cast<size_t>(k.o), 3);
  const auto g = values(static_cast<size_t>(k.n * k.o * k.ho() * k.wo()), 4);
  auto opts = kiln::TensorOptions().dtype(dtype);
  Tensor tx = kiln::from_vector<double>(x, {k.n, k.c, k.h, k.w}, opts).requires_grad_();
  Tensor tw = kiln::from_vector<double>(w, {k.o, cg, k.kh, k.kw}, opts).requires_grad_();
  Tensor tb = kiln::from_vector<double>(b, {k.o}, opts).requires_grad_();
  Tensor tg = kiln::from_vector<double>(g, {k.n, k.o, k.ho(), k.wo()}, opts);
  // The reference uses exactly the values the tensors hold.
  const ConvReference r =
      reference_conv(k, tx.detach().to_vector<double>(), tw.detach().to_vector<double>(),
                     tb.detach().to_vector<double>(), tg.to_vector<double>());
  Tensor y = F::conv2d(tx, tw, tb, {k.sh, k.sw}, {k.ph, k.pw}, {k.dh, k.dw}, k.groups);
  ASSERT_EQ(y.shape(), kiln::IntArrayRef({k.n, k.o, k.ho(), k.wo()}));
  EXPECT_TRUE(close(y, r.y, tol)) << "y";
  y.backward(tg);
  EXPECT_TRUE(close(tx.grad(), r.grad_x, tol)) << "grad_x";
  EXPECT_TRUE(close(tw.grad(), r.grad_w, tol)) << "grad_w";
  EXPECT_TRUE(close(tb.grad(), r.grad_b, tol)) << "grad_b";
}

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      // The training CNN's two layers (3x3, padding 1), small batch.
      {3, 1, 28, 28, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1},
      {5, 8, 14, 14, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1},
      // Batch 1 and 2: tasks split positions and channels for the pool.
      {1, 6, 9, 11, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1},
      {2, 3, 40, 40, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1},
      // A plane large enough for several blocks of output positions (K·P > 2^18).
      {2, 8, 70, 66, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1},
      // More samples than partial weight gradients (16), unevenly split.
      {21, 2, 6, 5, 3, 2, 2, 1, 1, 0, 0, 1, 1, 1},
      // Strides, dilation, asymmetric and over-wide padding, groups.
      {2, 4, 9, 8, 6, 3, 2, 2, 3, 1, 2, 1, 2, 2},
      {3, 2, 7, 7, 4, 3, 3, 1, 2, 3, 3, 2, 1, 1},
      {2, 6, 8, 10, 9, 2, 3, 2, 1, 0, 1, 3, 1, 3},
      // 3x3 stride 1 with at least 8 channels each way: Winograd for float32 (padding
      // 0, 1, 2, asymmetric; odd planes; a 1x1 plane; more tiles than one chunk).
      {3, 9, 9, 11, 12, 3, 3, 1, 1, 0, 0, 1, 1, 1},
      {2, 16, 7, 5, 8, 3, 3, 1, 1, 2, 2, 1, 1, 1},
      {2, 8, 6, 9, 10, 3, 3, 1, 1, 1, 0, 1, 1, 1},
      {2, 8, 1, 1, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1},
      {9, 8, 20, 18, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1},
      // 1x1 direct path (no im2col), one with a large plane.
      {3, 5, 4, 6, 7, 1, 1, 1, 1, 0, 0, 1, 1, 1},
      {2, 3, 90, 90, 4, 1, 1, 1, 1, 0, 0, 1, 1, 1},
      // 1x1 with stride or padding goes through im2col.
      {2, 3, 7, 7, 2, 1, 1, 2, 2, 1, 1, 1, 1, 1},
  };
  return cases;
}

TEST(ConvReference, Float64) {
  for (const ConvCase& k : conv_cases()) check_conv(k, kiln::float64, 1e-12);
}

TEST(ConvReference, Float32) {
  for (const ConvCase& k : conv_cases()) check_conv(k, kiln::float32, 2e-5);
}

TEST(ConvReference, RepeatedRunsAreBitIdentical) {
  const ConvCase k{21, 8, 14, 14, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1};
  auto run = [&] {
    kiln::manual_seed(5);
    Tensor x = kiln::randn({k.n, k.c, k.h, k.w}).requires_grad_();
    Tensor w = kiln::randn({k.o, k.c, k.kh, k.kw}).requires_grad_();
    Tensor y = F::conv2d(x, w, {}, 1, 1);
    y.backward(kiln::randn(y.shape().vec()));
    std::vector<float> all = y.to_vector<float>();
    for (const Tensor& t : {x.grad(), w.grad()}) {
      auto v = t.to_vector<float>();
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  };
  const auto first = run();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(run(), first);
}

// ---- max pooling -----------------------------------------------------------------

struct PoolCase {
  int64_t n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw;
  bool ceil_mode;
};

int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t span = in + 2 * p - d * (k - 1) - 1;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

void check_max_pool(const PoolCase& k, const std::vector<double>& x, kiln::DType dtype) {
  std::ostringstream name;
  name << "x[" << k.n << "," << k.c << "," << k.h << "," << k.w << "] kernel (" << k.kh << ","
       << k.kw << ") stride (" << k.sh << "," << k.sw << ") pad (" << k.ph << "," << k.pw
       << ") dil (" << k.dh << "," << k.dw << ") ceil " << k.ceil_mode << " "
       << kiln::dtype_name(dtype);
  SCOPED_TRACE(name.str());
  const int64_t ho = pool_out(k.h, k.kh, k.sh, k.ph, k.dh, k.ceil_mode);
  const int64_t wo = pool_out(k.w, k.kw, k.sw, k.pw, k.dw, k.ceil_mode);
  auto opts = kiln::TensorOptions().dtype(dtype);
  Tensor tx = kiln::from_vector<double>(x, {k.n, k.c, k.h, k.w}, opts).requires_grad_();
  const std::vector<double> xv = tx.detach().to_vector<double>();
  const auto g = values(static_cast<size_t>(k.n * k.c * ho * wo), 9);
  Tensor tg = kiln::from_vector<double>(g, {k.n, k.c, ho, wo}, opts);
  const std::vector<double> gv = tg.to_vector<double>();

  // Reference (PyTorch's rule): the first maximum of each window wins ties, a NaN wins
  // over every number, and of several NaNs the last wins.
  std::vector<double> y(gv.size()), grad_x(xv.size(), 0.0);
  for (int64_t p = 0; p < k.n * k.c; ++p)
    for (int64_t oh = 0; oh < ho; ++oh)
      for (int64_t ow = 0; ow < wo; ++ow) {
        double best = -std::numeric_limits<double>::infinity();
        int64_t at = -1;
        for (int64_t i = 0; i < k.kh; ++i)
          for (int64_t j = 0; j < k.kw; ++j) {
            const int64_t ih = oh * k.sh - k.ph + i * k.dh, iw = ow * k.sw - k.pw + j * k.dw;
            if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w) continue;
            const double v = xv[static_cast<size_t>((p * k.h + ih) * k.w + iw)];
            const bool better = at < 0 || v > best || std::isnan(v);
            if (better) {
              best = v;
              at = (p * k.h + ih) * k.w + iw;
            }
          }
        const size_t yi = static_cast<size_t>((p * ho + oh) * wo + ow);
        y[yi] = best;
        grad_x[static_cast<size_t>(at)] += gv[yi];
      }
  Tensor ty = F::max_pool2d(tx, {k.kh, k.kw}, kiln::nn::Size2{k.sh, k.sw}, {k.ph, k.pw},
                            {k.dh, k.dw}, k.ceil_mode);
  ASSERT_EQ(ty.shape(), kiln::IntArrayRef({k.n, k.c, ho, wo}));
  EXPECT_TRUE(close(ty, y, 0)) << "y";
  ty.backward(tg);
  // Overlapping windows sum several gradients into one element.
  EXPECT_TRUE(close(tx.grad(), grad_x, dtype == kiln::float64 ? 1e-15 : 1e-6)) << "grad_x";
}

TEST(MaxPoolReference, FastAndGeneralPaths) {
  const std::vector<PoolCase> cases = {
      {3, 4, 28, 28, 2, 2, 2, 2, 0, 0, 1, 1, false},  // the CNN's pools
      {2, 3, 14, 14, 2, 2, 2, 2, 0, 0, 1, 1, false},
      {2, 3, 7, 9, 2, 2, 2, 2, 0, 0, 1, 1, false},    // odd sizes: last row/column unused
      {2, 3, 7, 9, 2, 2, 2, 2, 0, 0, 1, 1, true},     // ceil_mode: clipped last windows
      {1, 2, 33, 35, 2, 2, 2, 2, 0, 0, 1, 1, false},  // widths that are not multiples of 4
      {2, 2, 9, 9, 3, 3, 2, 2, 1, 1, 1, 1, false},    // overlapping, padded
      {2, 2, 10, 11, 2, 3, 1, 2, 1, 1, 2, 1, true},   // dilated, ceil_mode
  };
  for (const PoolCase& k : cases) {
    for (kiln::DType dtype : {kiln::float32, kiln::float64}) {
      auto x = values(static_cast<size_t>(k.n * k.c * k.h * k.w), 7);
      check_max_pool(k, x, dtype);
    }
  }
}

TEST(MaxPoolReference, NaNAndTies) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const PoolCase k{1, 2, 6, 10, 2, 2, 2, 2, 0, 0, 1, 1, false};
  // Plane 0: windows with a NaN in each position, two NaNs, ties, -inf, +inf.
  std::vector<double> x(2 * 6 * 10, 0.0);
  auto at = [&](int64_t c, int64_t h, int64_t w) -> double& {
    return x[static_cast<size_t>((c * 6 + h) * 10 + w)];
  };
  at(0, 0, 0) = nan;                                      // window (0,0): NaN first
  at(0, 1, 3) = nan;                                      // window (0,1): NaN last
  at(0, 0, 4) = 5, at(0, 1, 5) = nan, at(0, 1, 4) = nan;  // (0,2): two NaNs, last wins
  at(0, 0, 6) = 2, at(0, 0, 7) = 2, at(0, 1, 6) = 2;      // (0,3): ties, first wins
  at(0, 2, 0) = -inf, at(0, 2, 1) = -inf, at(0, 3, 0) = -inf, at(0, 3, 1) = -inf;
  at(0, 2, 3) = inf;
  for (int64_t i = 0; i < 6 * 10; ++i) x[static_cast<size_t>(60 + i)] = static_cast<double>(i % 7);
  for (kiln::DType dtype : {kiln::float32, kiln::float64}) check_max_pool(k, x, dtype);
}

// Values printed by PyTorch 1.13.1 (Debian's python3-torch, by hand) for the same input:
// F.max_pool2d(x, (2, 1), padding=(1, 0), ceil_mode=True), backward with 1, 2, 3, ...
// Windows of two NaNs give the gradient to the second, as PyTorch does (Kiln gave it to
// the first).
TEST(MaxPoolReference, CeilModePaddingAndNaNsAsPyTorch) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> x = {1, nan, 3,   nan, 2, -inf, nan,  5,    -inf, 4,   4,   nan,
                                 0, -1,  nan, nan, 7, 2,    2,    2,    2,    nan, nan, 1,
                                 3, 1,   nan, nan, 0, nan,  -inf, -inf, 1,    6,   nan, nan};
  const std::vector<double> y = {1, nan, 3, nan, 5,   -inf, 4,   4, nan, nan, 7,   2,
                                 2, 2,   2, nan, nan, nan,  nan, 0, nan, 6,   nan, nan};
  const std::vector<double> grad_x = {1, 2, 3,  0,  0,  6,  4,  5,  0,  7,  8,  0,
                                      0, 0, 9,  10, 11, 12, 13, 14, 15, 16, 17, 0,
                                      0, 0, 18, 19, 20, 21, 0,  0,  0,  22, 23, 24};
  for (kiln::DType dtype : {kiln::float32, kiln::float64}) {
    SCOPED_TRACE(kiln::dtype_name(dtype));
    auto opts = kiln::TensorOptions().dtype(dtype);
    Tensor tx = kiln::from_vector<double>(x, {1, 2, 6, 3}, opts).requires_grad_();
    Tensor ty = F::max_pool2d(tx, {2, 1}, std::nullopt, {1, 0}, 1, true);
    ASSERT_EQ(ty.shape(), kiln::IntArrayRef({1, 2, 4, 3}));
    EXPECT_TRUE(close(ty, y, 0)) << "y";
    std::vector<double> g(24);
    for (size_t i = 0; i < g.size(); ++i) g[i] = static_cast<double>(i + 1);
    ty.backward(kiln::from_vector<double>(g, {1, 2, 4, 3}, opts));
    EXPECT_TRUE(close(tx.grad(), grad_x, 0)) << "grad_x";
  }
}

// PyTorch 1.13 takes unbatched [C, H, W] input for pooling and conv2d (values printed by
// it for u = (arange(1, 41) * 7 % 11).reshape(2, 5, 4)).
TEST(PoolReference, UnbatchedInputAsPyTorch) {
  std::vector<double> u(40);
  for (size_t i = 0; i < u.size(); ++i) u[i] = static_cast<double>((i + 1) * 7 % 11);
  Tensor x = kiln::from_vector<double>(u, {2, 5, 4}).requires_grad_();
  Tensor m = F::max_pool2d(x, 2, std::nullopt, 0, 1, true);
  ASSERT_EQ(m.shape(), kiln::IntArrayRef({2, 3, 2}));
  EXPECT_TRUE(close(m, {9, 10, 10, 7, 9, 8, 10, 9, 7, 10, 6, 9}, 0));
  m.sum().backward();
  EXPECT_TRUE(close(x.grad(), {0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 1, 0, 0, 1,
                               0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1, 1, 0, 1, 0},
                    0));
  Tensor x2 = kiln::from_vector<double>(u, {2, 5, 4}).requires_grad_();
  Tensor a = F::avg_pool2d(x2, 3, 2, 1, true, false);
  ASSERT_EQ(a.shape(), kiln::IntArrayRef({2, 3, 3}));
  EXPECT_TRUE(close(a,
                    {5.25, 5.666666666666667, 3.5, 6.0, 4.888888888888889, 3.3333333333333335, 6.75,
                     5.333333333333333, 5.0, 5.0, 4.5, 6.0, 4.833333333333333, 5.555555555555555,
                     7.666666666666667, 3.75, 6.0, 7.5},
                    1e-15));
  a.sum().backward();
  EXPECT_TRUE(close(x2.grad(),
                    {0.25,
                     0.41666666666666663,
                     0.16666666666666666,
                     0.6666666666666666,
                     0.41666666666666663,
                     0.6944444444444444,
                     0.2777777777777778,
                     1.111111111111111,
                     0.16666666666666666,
                     0.2777777777777778,
                     0.1111111111111111,
                     0.4444444444444444,
                     0.41666666666666663,
                     0.6944444444444444,
                     0.2777777777777778,
                     1.1111111111111112,
                     0.25,
                     0.41666666666666663,
                     0.16666666666666666,
                     0.6666666666666666,
                     0.25,
                     0.41666666666666663,
                     0.16666666666666666,
                     0.6666666666666666,
                     0.41666666666666663,
                     0.6944444444444444,
                     0.2777777777777778,
                     1.111111111111111,
                     0.16666666666666666,
                     0.2777777777777778,
                     0.1111111111111111,
                     0.4444444444444444,
                     0.41666666666666663,
                     0.6944444444444444,
                     0.2777777777777778,
                     1.1111111111111112,
                     0.25,
                     0.41666666666666663,
                     0.16666666666666666,
                     0.6666666666666666},
                    1e-15));
  Tensor ad = F::adaptive_avg_pool2d(x.detach(), {2, 3});
  ASSERT_EQ(ad.shape(), kiln::IntArrayRef({2, 2, 3}));
  EXPECT_TRUE(close(ad,
                    {5.5, 5.166666666666667, 4.833333333333333, 6.5, 4.333333333333333, 4.0,
                     4.333333333333333, 4.0, 5.5, 3.5, 5.0, 6.5},
                    1e-15));
  std::vector<double> w(16);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<double>(i + 1) / 10;
  Tensor c = F::conv2d(x.detach(), kiln::from_vector<double>(w, {2, 2, 2, 2}), {}, 1, 1);
  ASSERT_EQ(c.shape(), kiln::IntArrayRef({2, 6, 5}));
  EXPECT_TRUE(close(c.flatten().narrow(0, 0, 6), {6.0, 6.1, 10.5, 12.7, 3.9, 12.6}, 1e-14));
}

// A window larger than the padded input is an error, as in PyTorch ("Output size is too
// small" / "Kernel size can't be greater than actual input size"); Kiln's output sizes
// rounded the negative span toward zero and returned a 1x1 output for these.
TEST(PoolReference, WindowLargerThanTheInputThrows) {
  Tensor x = kiln::zeros({1, 1, 2, 2}, kiln::float64);
  auto message = [](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const kiln::Error& e) {
      return e.what();
    }
    return "no error";
  };
  const std::string max3 = message([&] { F::max_pool2d(x, 3, 3); });
  EXPECT_NE(max3.find("max_pool2d: output size is too small"), std::string::npos) << max3;
  EXPECT_NE(max3.find("[1, 1, 2, 2]"), std::string::npos) << max3;
  EXPECT_NE(max3.find("gives 0x0"), std::string::npos) << max3;
  EXPECT_THROW(F::max_pool2d(x, {4, 1}, kiln::nn::Size2{3, 3}), kiln::Error);
  EXPECT_THROW(F::avg_pool2d(x, 3, 3), kiln::Error);
  EXPECT_THROW(F::avg_pool2d(x, {4, 1}, kiln::nn::Size2{3, 3}), kiln::Error);
  const std::string conv = message([&] {
    F::conv2d(x, kiln::zeros({1, 1, 4, 4}, kiln::float64), {}, 3);
  });
  EXPECT_NE(conv.find("conv2d: the input [1, 1, 2, 2] padded by (0, 0) is 2x2, smaller than"),
            std::string::npos)
      << conv;
  EXPECT_THROW(F::conv2d(x, kiln::zeros({1, 1, 3, 3}, kiln::float64), {}, 3, 1, 2), kiln::Error);
  // With ceil_mode a window may overhang the input, as in PyTorch: [1, 1, 1, 1].
  EXPECT_EQ(F::max_pool2d(x, 3, 2, 0, 1, true).shape(), kiln::IntArrayRef({1, 1, 1, 1}));
  EXPECT_EQ(F::avg_pool2d(x, 3, 2, 0, true).shape(), kiln::IntArrayRef({1, 1, 1, 1}));
}

}  // namespace
