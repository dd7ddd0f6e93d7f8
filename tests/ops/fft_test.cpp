// kiln::fft on every device, against a direct O(n²) DFT in float64 on the host and against
// values numpy.fft printed (numpy 1.24, float64; quoted below). Lengths cover 1, primes,
// powers of two, smooth and non-smooth composites (kissfft directly, and Bluestein). Each
// element must be within tol·Σ|x| of the reference, Σ|x| the input's L1 norm (which bounds
// every output's magnitude): tol = 1e-11 for complex128/float64, 2e-5 for complex64/float32.
// Gradients: gradcheck (float64 finite differences) of every transform, real and complex
// inputs, every norm.
#include <cmath>
#include <complex>

#include "kiln/fft.h"
#include "ops/conformance.h"

namespace kiln::test {
namespace {

using cd = std::complex<double>;

// A tensor's values on the host, row-major, with its shape.
struct Host {
  std::vector<cd> v;
  Shape shape;
  int64_t outer(int64_t dim) const {
    int64_t n = 1;
    for (int64_t d = 0; d < dim; ++d) n *= shape[static_cast<size_t>(d)];
    return n;
  }
  int64_t inner(int64_t dim) const {
    int64_t n = 1;
    for (size_t d = static_cast<size_t>(dim) + 1; d < shape.size(); ++d) n *= shape[d];
    return n;
  }
};

Host host_of(const Tensor& t) {
  Tensor c = is_complex(t.dtype()) ? t.to(complex128) : t.to(float64).to(complex128);
  return {c.contiguous().to_vector<cd>(), t.shape().vec()};
}

// x zero-padded or trimmed to n along dim.
Host resized(const Host& x, int64_t dim, int64_t n) {
  const int64_t have = x.shape[static_cast<size_t>(dim)], outer = x.outer(dim),
                inner = x.inner(dim);
  Host y{std::vector<cd>(static_cast<size_t>(outer * n * inner)), x.shape};
  y.shape[static_cast<size_t>(dim)] = n;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < std::min(n, have); ++k)
      for (int64_t i = 0; i < inner; ++i)
        y.v[static_cast<size_t>((o * n + k) * inner + i)] =
            x.v[static_cast<size_t>((o * have + k) * inner + i)];
  return y;
}

// The unnormalized DFT along dim: sign -1 forward, +1 inverse; scaled by `scale`.
Host dft(const Host& x, int64_t dim, int sign, double scale = 1) {
  const int64_t n = x.shape[static_cast<size_t>(dim)], outer = x.outer(dim), inner = x.inner(dim);
  Host y{std::vector<cd>(x.v.size()), x.shape};
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      for (int64_t k = 0; k < n; ++k) {
        cd acc = 0;
        for (int64_t j = 0; j < n; ++j) {
          const double angle =
              sign * 2 * M_PI * static_cast<double>((j * k) % n) / static_cast<double>(n);
          acc += x.v[static_cast<size_t>((o * n + j) * inner + i)] *
                 cd(std::cos(angle), std::sin(angle));
        }
        y.v[static_cast<size_t>((o * n + k) * inner + i)] = acc * scale;
      }
  return y;
}

double l1(const Host& x) {
  double s = 0;
  for (cd c : x.v) s += std::abs(c);
  return s;
}

class Fft : public DeviceTest {
 protected:
  Tensor random_complex(const Shape& shape, uint32_t seed, DType dtype = complex128) const {
    Shape pairs = shape;
    pairs.push_back(2);
    return view_as_complex(random(pairs, seed, real_dtype(dtype)));
  }
  // got (complex or real) against want, within tol·bound.
  static void expect_close(const Tensor& got, const Host& want, double bound,
                           const std::string& what) {
    ASSERT_EQ(got.shape().vec(), want.shape) << what;
    const double tol = (real_dtype(got.dtype()) == float32 ? 2e-5 : 1e-11) * std::max(bound, 1.0);
    const Host g = host_of(got);
    for (size_t i = 0; i < g.v.size(); ++i)
      if (!(std::abs(g.v[i] - want.v[i]) <= tol)) {
        ADD_FAILURE() << what << ": element " << i << " is " << g.v[i] << ", expected " << want.v[i]
                      << " (tolerance " << tol << ")";
        return;
      }
  }
};

const std::vector<int64_t> kLengths = {1,  2,  3,  4,  5,   7,   8,   12,  16,
                                       17, 30, 64, 97, 100, 128, 243, 1009};

TEST_P(Fft, ComplexTransformsOfAnyLength) {
  for (DType dtype : {complex128, complex64})
    for (int64_t n : kLengths) {
      const std::string what = std::string(dtype_name(dtype)) + " n=" + std::to_string(n);
      Tensor x = random_complex({n}, static_cast<uint32_t>(n), dtype);
      const Host h = host_of(x);
      Tensor y = fft::fft(x);
      EXPECT_EQ(y.dtype(), dtype);
      expect_close(y, dft(h, 0, -1), l1(h), "fft " + what);
      expect_close(fft::ifft(x), dft(h, 0, 1, 1.0 / static_cast<double>(n)), l1(h), "ifft " + what);
      expect_close(fft::ifft(y), h, l1(h), "ifft(fft) " + what);
    }
}

// Long signals take the other paths: the four-step algorithm (2^15, 3^10) and Bluestein on
// a four-step transform (the prime 20011, through 65536 points). The direct DFT is too
// slow at these sizes, so it is checked at 16 output positions; ifft(fft(x)) everywhere.
// Tolerance there: |error| <= tol·log2(n)·||x||_2, tol = 1e-6 (complex64), 1e-14 (complex128).
TEST_P(Fft, LongSignalsAtSampledFrequencies) {
  for (DType dtype : {complex128, complex64})
    for (int64_t n : {int64_t{1} << 15, int64_t{59049}, int64_t{20011}}) {
      const std::string what = std::string(dtype_name(dtype)) + " n=" + std::to_string(n);
      Tensor x = random_complex({n}, static_cast<uint32_t>(n % 1000), dtype);
      const Host h = host_of(x);
      double norm2 = 0;
      for (cd c : h.v) norm2 += std::norm(c);
      const double tol = (dtype == complex64 ? 1e-6 : 1e-14) * std::log2(static_cast<double>(n)) *
                         std::sqrt(norm2);
      const Host y = host_of(fft::fft(x));
      for (int64_t s = 0; s < 16; ++s) {
        const int64_t k = s < 4 ? std::vector<int64_t>{0, 1, n / 2, n - 1}[static_cast<size_t>(s)]
                                : (s * 7919 * 104729) % n;
        cd want = 0;
        for (int64_t j = 0; j < n; ++j) {
          const double angle =
              -2 * M_PI * static_cast<double>((j * k) % n) / static_cast<double>(n);
          want += h.v[static_cast<size_t>(j)] * cd(std::cos(angle), std::sin(angle));
        }
        EXPECT_LE(std::abs(y.v[static_cast<size_t>(k)] - want), tol) << what << " k=" << k;
      }
      expect_close(fft::ifft(fft::fft(x)), h, dtype == complex64 ? 0.5 : 1, "ifft(fft) " + what);
    }
}

TEST_P(Fft, RealTransformsBatched) {
  for (DType dtype : {float64, float32})
    for (int64_t n : kLengths) {
      const std::string what = std::string(dtype_name(dtype)) + " n=" + std::to_string(n);
      Tensor x = random({3, n}, static_cast<uint32_t>(100 + n), dtype);
      const Host h = host_of(x);
      const Host full = dft(h, 1, -1);
      Tensor spectrum = fft::rfft(x);
      EXPECT_EQ(spectrum.dtype(), complex_dtype(dtype));
      expect_close(spectrum, resized(full, 1, n / 2 + 1), l1(h), "rfft " + what);
      expect_close(fft::fft(x), full, l1(h), "fft of real " + what);
      expect_close(fft::ifft(x), dft(h, 1, 1, 1.0 / static_cast<double>(n)), l1(h),
                   "ifft of real " + what);
      Tensor back = fft::irfft(spectrum, n);
      EXPECT_EQ(back.dtype(), dtype);
      expect_close(back, h, l1(h), "irfft(rfft) " + what);
      // ihfft is conj(rfft) / n; hfft(ihfft(x), n) gives x back.
      Tensor ih = fft::ihfft(x);
      expect_close(ih, resized(dft(h, 1, 1, 1.0 / static_cast<double>(n)), 1, n / 2 + 1), l1(h),
                   "ihfft " + what);
      expect_close(fft::hfft(ih, n), h, l1(h), "hfft(ihfft) " + what);
    }
}

TEST_P(Fft, MatchesNumpy) {
  // numpy.fft on x = [1, 2.5, -1, 0.5, 3] and h = [1, 2-1j, 0.5+0.5j].
  Tensor x = make({1, 2.5, -1, 0.5, 3}, {5}, float64);
  Tensor h = complex(make({1, 2, 0.5}, {3}, float64), make({0, -1, 0.5}, {3}, float64));
  auto host = [](std::vector<cd> v) { return Host{v, {static_cast<int64_t>(v.size())}}; };
  auto real_host = [](std::vector<double> v) {
    return Host{std::vector<cd>(v.begin(), v.end()), {static_cast<int64_t>(v.size())}};
  };
  expect_close(fft::fft(x),
               host({{6, 0},
                     {3.1041019662496847, 1.3572061365862864},
                     {-3.604101966249685, -1.1326921482964938},
                     {-3.604101966249685, 1.1326921482964938},
                     {3.1041019662496847, -1.3572061365862864}}),
               1, "np.fft.fft(x)");
  expect_close(fft::ihfft(x),
               host({{1.2000000000000002, 0},
                     {0.620820393249937, -0.2714412273172573},
                     {-0.7208203932499371, 0.22653842965929877}}),
               1, "np.fft.ihfft(x)");
  expect_close(fft::hfft(h), real_host({5.5, -1.5, -2.5, 2.5}), 1, "np.fft.hfft(h)");
  expect_close(fft::hfft(h, 5, -1, "ortho"),
               real_host({2.6832815729997477, 0.050411348832537464, -1.8128599151701428,
                          0.08925311742016409, 1.2259818534174836}),
               1, "np.fft.hfft(h, n=5, norm='ortho')");
  expect_close(fft::irfft(h, 5, -1, "ortho"),
               real_host({2.6832815729997477, 1.2259818534174836, 0.08925311742016409,
                          -1.8128599151701428, 0.050411348832537464}),
               1, "np.fft.irfft(h, n=5, norm='ortho')");
  expect_close(fft::rfft(x, 8, -1, "forward"),
               host({{0.75, 0},
                     {-0.0732233047033631, -0.14016504294495535},
                     {0.625, -0.25},
                     {-0.42677669529663687, -0.39016504294495535},
                     {0, 0}}),
               1, "np.fft.rfft(x, n=8, norm='forward')");
  expect_close(fft::ifft(x, 3),
               host({{0.8333333333333333, 0},
                     {0.08333333333333333, 1.010362971081845},
                     {0.08333333333333333, -1.010362971081845}}),
               1, "np.fft.ifft(x, n=3)");
  Tensor a = make({1, 2, 0.5, -1, 3, 2}, {2, 3}, float64);
  Host a2 = host({{7.5, 0}, {-3.75, -2.1650635094610964}, {-0.5, 0}, {3.25, -0.4330127018922194}});
  a2.shape = {2, 2};
  expect_close(fft::rfft2(a), a2, 1, "np.fft.rfft2(a)");
  expect_close(fft::irfft2(fft::rfft2(a), std::vector<int64_t>{2, 3}), host_of(a), 1,
               "np.fft.irfft2(rfft2(a), s=(2, 3))");
}

TEST_P(Fft, PaddingTrimmingAndEveryNorm) {
  Tensor x = random_complex({2, 6}, 7);
  const Host h = host_of(x);
  for (int64_t n : {3, 6, 11}) {
    const Host r = resized(h, 1, n);
    const double inv_n = 1.0 / static_cast<double>(n),
                 inv_sqrt = 1.0 / std::sqrt(static_cast<double>(n));
    const std::string what = " n=" + std::to_string(n);
    expect_close(fft::fft(x, n, 1, "backward"), dft(r, 1, -1), l1(h), "fft backward" + what);
    expect_close(fft::fft(x, n, 1, "forward"), dft(r, 1, -1, inv_n), l1(h), "fft forward" + what);
    expect_close(fft::fft(x, n, 1, "ortho"), dft(r, 1, -1, inv_sqrt), l1(h), "fft ortho" + what);
    expect_close(fft::ifft(x, n, -1, "backward"), dft(r, 1, 1, inv_n), l1(h),
                 "ifft backward" + what);
    expect_close(fft::ifft(x, n, -1, "forward"), dft(r, 1, 1), l1(h), "ifft forward" + what);
    expect_close(fft::ifft(x, n, -1, "ortho"), dft(r, 1, 1, inv_sqrt), l1(h), "ifft ortho" + what);
  }
  // irfft with n above and below 2·(size - 1): the spectrum is padded or trimmed to n/2+1.
  Tensor spectrum = random_complex({4}, 8);
  for (int64_t n : {3, 4, 6, 9}) {
    Host s = resized(host_of(spectrum), 0, n / 2 + 1);
    s.v[0] = s.v[0].real();
    if (n % 2 == 0) s.v.back() = s.v.back().real();
    Host full = resized(s, 0, n);
    for (int64_t k = n / 2 + 1; k < n; ++k)
      full.v[static_cast<size_t>(k)] = std::conj(full.v[static_cast<size_t>(n - k)]);
    expect_close(fft::irfft(spectrum, n), dft(full, 0, 1, 1.0 / static_cast<double>(n)), l1(full),
                 "irfft n=" + std::to_string(n));
  }
}

TEST_P(Fft, NonContiguousInputsAndManyDims) {
  // Transposed: [5, 6, 4] with strides [1, 4, 30], transformed along dims 0 and 2.
  Tensor x = random_complex({4, 6, 5}, 9).transpose(0, 2);
  const Host h = host_of(x);
  expect_close(fft::fftn(x, std::nullopt, std::vector<int64_t>{0, 2}), dft(dft(h, 0, -1), 2, -1),
               l1(h), "fftn dims {0, 2} of a transposed tensor");
  expect_close(fft::ifft2(x), dft(dft(h, 1, 1, 1.0 / 6), 2, 1, 1.0 / 4), l1(h),
               "ifft2 of a transposed tensor");
  expect_close(fft::fftn(x), dft(dft(dft(h, 0, -1), 1, -1), 2, -1), l1(h), "fftn over all dims");
  expect_close(fft::fftn(x, std::vector<int64_t>{3, 8}),
               dft(dft(resized(resized(h, 1, 3), 2, 8), 1, -1), 2, -1), l1(h),
               "fftn with s over the last two dims");
  // Every other column (stride 2) of a real tensor; rfftn halves the last dim named (0).
  Tensor r = random({7, 10}, 10, float64).slice(1, 0, 10, 2);
  const Host hr = host_of(r);
  Tensor half = fft::rfftn(r, std::nullopt, std::vector<int64_t>{1, 0});
  expect_close(half, resized(dft(dft(hr, 1, -1), 0, -1), 0, 4), l1(hr), "rfftn dims {1, 0}");
  expect_close(fft::irfftn(half, std::vector<int64_t>{5, 7}, std::vector<int64_t>{1, 0}), hr,
               l1(hr), "irfftn(rfftn)");
  // A contiguous view that starts at an odd element (not at a complex pair's alignment).
  for (DType dtype : {float32, float64}) {
    Tensor row = random({3, 7}, 12, dtype).select(0, 1);
    const Host hrow = host_of(row);
    expect_close(fft::rfft(row), resized(dft(hrow, 0, -1), 0, 4), l1(hrow),
                 "rfft of row 1 of [3, 7]");
  }
  // A batch of images: rfft2 over the last two dims of [3, 2, 4, 6].
  Tensor images = random({3, 2, 4, 6}, 11, float32);
  const Host hi = host_of(images);
  expect_close(fft::rfft2(images), resized(dft(dft(hi, 3, -1), 2, -1), 3, 4), l1(hi) / 6,
               "batched rfft2");
  expect_close(fft::irfft2(fft::rfft2(images), std::vector<int64_t>{4, 6}), hi, l1(hi) / 6,
               "batched irfft2(rfft2)");
}

// Each row of a batch is transformed on its own: a small row next to a large one keeps
// its own accuracy (tolerance relative to the row's L1 norm), and an all-zero row stays
// exactly zero. Length-1 transforms over many lines (in parallel) are the identity.
TEST_P(Fft, RowsOfABatchAreIndependent) {
  for (int64_t n : {8, 9, 256}) {
    Tensor big = random({1, n}, 60, float32) * 1e6;
    Tensor small = random({1, n}, 61, float32);
    Tensor x = cat({big, small, zeros({1, n}, opts(float32))}, 0);
    Tensor y = fft::rfft(x);
    const Host hs = host_of(small);
    expect_close(y.narrow(0, 1, 1), resized(dft(hs, 1, -1), 1, n / 2 + 1), l1(hs),
                 "the small row, n=" + std::to_string(n));
    EXPECT_EQ(view_as_real(y.narrow(0, 2, 1)).abs().sum().item<float>(), 0.0f);
  }
  Tensor lines = random_complex({20000, 1}, 62);
  EXPECT_EQ(host_of(fft::fft(lines)).v, host_of(lines).v);
  EXPECT_EQ(host_of(fft::ifft(lines)).v, host_of(lines).v);
  Tensor real_lines = random({20000, 1}, 63, float64);
  EXPECT_EQ(host_of(fft::rfft(real_lines)).v, host_of(real_lines).v);
}

TEST_P(Fft, IntegerInputsComputeInFloat32) {
  Tensor x = make({1, 2, 3, 4}, {4}, int64);
  Tensor y = fft::rfft(x);
  EXPECT_EQ(y.dtype(), complex64);
  expect_close(y, resized(dft(host_of(x), 0, -1), 0, 3), 10, "rfft of int64");
}

TEST_P(Fft, FrequenciesAndShifts) {
  // numpy: fftfreq(5, 0.1), rfftfreq(6, 0.5), fftshift(arange(5)), ifftshift(arange(5)).
  EXPECT_EQ(fft::fftfreq(5, 0.1, opts(float64)).to_vector<double>(),
            (std::vector<double>{0, 2, 4, -4, -2}));
  auto rf = fft::rfftfreq(6, 0.5, opts(float64)).to_vector<double>();
  const std::vector<double> want = {0, 0.3333333333333333, 0.6666666666666666, 1};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(rf[i], want[i], 1e-15);
  EXPECT_EQ(fft::fftfreq(4).dtype(), float32);
  Tensor a = arange(5, opts(float64));
  EXPECT_EQ(fft::fftshift(a).to_vector<double>(), (std::vector<double>{3, 4, 0, 1, 2}));
  EXPECT_EQ(fft::ifftshift(a).to_vector<double>(), (std::vector<double>{2, 3, 4, 0, 1}));
  Tensor m = arange(6, opts(float64)).reshape({2, 3});
  EXPECT_EQ(fft::ifftshift(fft::fftshift(m)).to_vector<double>(), m.to_vector<double>());
  EXPECT_EQ(fft::fftshift(m, std::vector<int64_t>{1}).to_vector<double>(),
            (std::vector<double>{2, 0, 1, 5, 3, 4}));
}

TEST_P(Fft, GradientsMatchFiniteDifferences) {
  auto leaf = [](Tensor t) {
    t.requires_grad_();
    return t;
  };
  using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
  struct Check {
    const char* what;
    Fn fn;
    bool complex_input;
    Shape shape;
  };
  std::vector<Check> checks;
  for (const char* norm : {"backward", "forward", "ortho"}) {
    const std::string nm = norm;
    checks.push_back({"fft",
                      [nm](const auto& x) { return fft::fft(x[0], std::nullopt, -1, nm); },
                      true,
                      {2, 5}});
    checks.push_back({"fft of real, n=7",
                      [nm](const auto& x) { return fft::fft(x[0], 7, 0, nm); },
                      false,
                      {5, 2}});
    checks.push_back(
        {"ifft n=3", [nm](const auto& x) { return fft::ifft(x[0], 3, -1, nm); }, true, {2, 5}});
    checks.push_back({"rfft",
                      [nm](const auto& x) { return fft::rfft(x[0], std::nullopt, -1, nm); },
                      false,
                      {2, 6}});
    checks.push_back(
        {"irfft odd n", [nm](const auto& x) { return fft::irfft(x[0], 5, -1, nm); }, true, {2, 3}});
    checks.push_back({"irfft even n",
                      [nm](const auto& x) { return fft::irfft(x[0], std::nullopt, -1, nm); },
                      true,
                      {2, 4}});
    checks.push_back(
        {"irfft n=9", [nm](const auto& x) { return fft::irfft(x[0], 9, -1, nm); }, true, {3}});
    checks.push_back(
        {"hfft", [nm](const auto& x) { return fft::hfft(x[0], 6, -1, nm); }, true, {2, 4}});
    checks.push_back({"ihfft",
                      [nm](const auto& x) { return fft::ihfft(x[0], std::nullopt, -1, nm); },
                      false,
                      {2, 5}});
    checks.push_back({"fft2",
                      [nm](const auto& x) {
                        return fft::fft2(x[0], std::nullopt, {-2, -1}, nm);
                      },
                      true,
                      {3, 4}});
    checks.push_back({"ifftn s",
                      [nm](const auto& x) {
                        return fft::ifftn(x[0], std::vector<int64_t>{2, 5}, std::nullopt, nm);
                      },
                      true,
                      {3, 4}});
    checks.push_back({"rfft2",
                      [nm](const auto& x) {
                        return fft::rfft2(x[0], std::nullopt, {-2, -1}, nm);
                      },
                      false,
                      {3, 4}});
    checks.push_back({"rfftn dims {1, 0}",
                      [nm](const auto& x) {
                        return fft::rfftn(x[0], std::nullopt, std::vector<int64_t>{1, 0}, nm);
                      },
                      false,
                      {5, 3}});
    checks.push_back({"irfft2",
                      [nm](const auto& x) {
                        return fft::irfft2(x[0], std::vector<int64_t>{3, 5}, {-2, -1}, nm);
                      },
                      true,
                      {3, 3}});
    checks.push_back({"irfftn dims {0}",
                      [nm](const auto& x) {
                        return fft::irfftn(x[0], std::nullopt, std::vector<int64_t>{0}, nm);
                      },
                      true,
                      {4, 2}});
  }
  uint32_t seed = 40;
  for (const Check& c : checks) {
    Tensor input =
        c.complex_input ? random_complex(c.shape, seed++) : random(c.shape, seed++, float64);
    auto result = gradcheck(c.fn, {leaf(input)});
    EXPECT_TRUE(result.ok) << c.what << ": " << result.message;
  }
}

TEST_P(Fft, BadArgumentsAreClearErrors) {
  Tensor x = random_complex({4}, 12);
  Tensor r = random({4}, 13);
  EXPECT_KILN_ERROR(fft::fft(x, 0), "invalid number of data points");
  EXPECT_KILN_ERROR(fft::irfft(random_complex({1}, 14)), "invalid number of data points");
  EXPECT_KILN_ERROR(fft::fft(x, std::nullopt, 1), "dim");
  EXPECT_KILN_ERROR(fft::fft(x, std::nullopt, -1, "unitary"), "norm");
  EXPECT_KILN_ERROR(fft::rfft(x), "real input");
  EXPECT_KILN_ERROR(fft::ihfft(x), "real input");
  EXPECT_KILN_ERROR(fft::rfft(r.to(float16)), "float16");
  EXPECT_KILN_ERROR(fft::fftn(random({2, 3}, 15), std::nullopt, std::vector<int64_t>{0, -2}),
                    "distinct");
  EXPECT_KILN_ERROR(
      fft::fftn(random({2, 3}, 16), std::vector<int64_t>{2}, std::vector<int64_t>{0, 1}), "sizes");
  EXPECT_KILN_ERROR(fft::fftfreq(0), "at least 1");
}

KILN_INSTANTIATE_FOR_EVERY_DEVICE(Fft);

}  // namespace
}  // namespace kiln::test
