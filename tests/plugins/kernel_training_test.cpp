// The training ops (OPS.md "Training ops") through the ABI. Forward kernels are
// checked against naive float64 references; linear backward kernels through the
// adjoint identity <A x, g> = <x, A^T g>; the others against central finite
// differences of the forward kernel in float64.
#include <cmath>
#include <functional>
#include <numeric>

#include "kiln/sdk/half.h"
#include "kiln/sdk/philox.h"
#include "plugin_fixture.h"

namespace kiln::test {
namespace {

std::vector<double> values(size_t n, uint32_t seed) {
  std::vector<double> v(n);
  uint32_t s = seed;
  for (size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    v[i] = static_cast<double>(static_cast<int32_t>(s >> 9) % 2001) / 1000.0 - 1.0;
  }
  return v;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
}

// ---- convolution ----------------------------------------------------------------

struct ConvCase {
  int64_t n, c, h, w, o, kh, kw, groups;
  int64_t stride[2], padding[2], dilation[2];
  int64_t ho() const { return (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) / stride[0] + 1; }
  int64_t wo() const { return (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) / stride[1] + 1; }
  std::vector<kiln_attr> attrs() const {
    return {ints_attr("stride", stride), ints_attr("padding", padding),
            ints_attr("dilation", dilation), int_attr("groups", groups)};
  }
};

std::vector<double> naive_conv(const ConvCase& k, const std::vector<double>& x,
                               const std::vector<double>& w, const std::vector<double>& b) {
  const int64_t cg = k.c / k.groups, og = k.o / k.groups, ho = k.ho(), wo = k.wo();
  std::vector<double> y(static_cast<size_t>(k.n * k.o * ho * wo));
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t o = 0; o < k.o; ++o)
      for (int64_t oh = 0; oh < ho; ++oh)
        for (int64_t ow = 0; ow < wo; ++ow) {
          double acc = b[static_cast<size_t>(o)];
          const int64_t g = o / og;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t i = 0; i < k.kh; ++i)
              for (int64_t j = 0; j < k.kw; ++j) {
                const int64_t ih = oh * k.stride[0] - k.padding[0] + i * k.dilation[0];
                const int64_t iw = ow * k.stride[1] - k.padding[1] + j * k.dilation[1];
                if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w) continue;
                acc += x[static_cast<size_t>(((n * k.c + g * cg + ci) * k.h + ih) * k.w + iw)] *
                       w[static_cast<size_t>(((o * cg + ci) * k.kh + i) * k.kw + j)];
              }
          y[static_cast<size_t>(((n * k.o + o) * ho + oh) * wo + ow)] = acc;
        }
  return y;
}

void check_conv(const ConvCase& k) {
  const int64_t cg = k.c / k.groups;
  std::vector<double> x = values(static_cast<size_t>(k.n * k.c * k.h * k.w), 1);
  std::vector<double> w = values(static_cast<size_t>(k.o * cg * k.kh * k.kw), 2);
  std::vector<double> b = values(static_cast<size_t>(k.o), 3);
  std::vector<double> y(static_cast<size_t>(k.n * k.o * k.ho() * k.wo()));
  View vx = view_of(x, KILN_DTYPE_FLOAT64, {k.n, k.c, k.h, k.w});
  View vw = view_of(w, KILN_DTYPE_FLOAT64, {k.o, cg, k.kh, k.kw});
  View vb = view_of(b, KILN_DTYPE_FLOAT64, {k.o});
  View vy = view_of(y, KILN_DTYPE_FLOAT64, {k.n, k.o, k.ho(), k.wo()});
  const auto attrs = k.attrs();
  auto run = [&](const char* name, std::initializer_list<const View*> in, const View* out) {
    kiln_kernel kernel = get_kernel(name);
    ASSERT_NE(kernel.run, nullptr);
    std::vector<kiln_tensor_view> ins, outs = {out->view};
    for (const View* v : in) ins.push_back(v->view);
    kiln_op_args a{sizeof(kiln_op_args), ins.data(),   ins.size(), outs.data(), 1,
                   attrs.data(),         attrs.size(), nullptr};
    const Outcome o = take(kernel.run(kernel.context, &a));
    ASSERT_TRUE(o.ok()) << name << ": " << o.message;
  };
  run("kiln.conv2d", {&vx, &vw, &vb}, &vy);
  const std::vector<double> expected = naive_conv(k, x, w, b);
  for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], expected[i], 1e-12) << i;

  // Adjoint checks: conv without bias is linear in x and in w.
  std::vector<double> g = values(y.size(), 4), gx(x.size()), gw(w.size());
  View vg = view_of(g, KILN_DTYPE_FLOAT64, {k.n, k.o, k.ho(), k.wo()});
  View vgx = view_of(gx, KILN_DTYPE_FLOAT64, {k.n, k.c, k.h, k.w});
  View vgw = view_of(gw, KILN_DTYPE_FLOAT64, {k.o, cg, k.kh, k.kw});
  run("kiln.conv2d_backward_input", {&vg, &vw}, &vgx);
  run("kiln.conv2d_backward_weight", {&vg, &vx}, &vgw);
  const std::vector<double> zero_bias(b.size(), 0.0);
  const std::vector<double> y0 = naive_conv(k, x, w, zero_bias);
  EXPECT_NEAR(dot(y0, g), dot(x, gx), 1e-10);
  EXPECT_NEAR(dot(y0, g), dot(w, gw), 1e-10);
  // And the gradients themselves, element by element, against a perturbation.
  const size_t probe = x.size() / 3;
  std::vector<double> x2 = x;
  x2[probe] += 1.0;
  EXPECT_NEAR(dot(naive_conv(k, x2, w, zero_bias), g) - dot(y0, g), gx[probe], 1e-10);
}

TEST(TrainingKernels, Conv2dGroupedStridedDilatedPadded) {
  check_conv({2, 4, 7, 6, 6, 3, 2, 2, {2, 1}, {1, 1}, {1, 2}});
}

TEST(TrainingKernels, Conv2dPointwise) {
  check_conv({3, 5, 4, 4, 7, 1, 1, 1, {1, 1}, {0, 0}, {1, 1}});
}

TEST(TrainingKernels, Conv2dFloat32AndHalfSupport) {
  std::vector<float> x(2 * 3 * 5 * 5, 1.0f), w(4 * 3 * 3 * 3, 0.5f), b(4, 0.25f), y(2 * 4 * 3 * 3);
  View vx = view_of(x, KILN_DTYPE_FLOAT32, {2, 3, 5, 5}),
       vw = view_of(w, KILN_DTYPE_FLOAT32, {4, 3, 3, 3});
  View vb = view_of(b, KILN_DTYPE_FLOAT32, {4}), vy = view_of(y, KILN_DTYPE_FLOAT32, {2, 4, 3, 3});
  const int64_t one[2] = {1, 1}, zero[2] = {0, 0};
  ASSERT_TRUE(run_op("kiln.conv2d", {&vx, &vw, &vb}, {&vy},
                     {ints_attr("stride", one), ints_attr("padding", zero),
                      ints_attr("dilation", one), int_attr("groups", 1)})
                  .ok());
  for (float v : y) ASSERT_EQ(v, 27 * 0.5f + 0.25f);
  // Half precision runs the float32 kernel on widened copies (kernels/widen.h) and
  // rounds once: 27 * 0.5 + 0.25 is exact in both half types.
  for (kiln_dtype dtype : {KILN_DTYPE_FLOAT16, KILN_DTYPE_BFLOAT16}) {
    auto half = [dtype](float v) {
      return dtype == KILN_DTYPE_FLOAT16 ? sdk::float16(v).bits : sdk::bfloat16(v).bits;
    };
    std::vector<uint16_t> hx(x.size(), half(1)), hw(w.size(), half(0.5f)), hb(4, half(0.25f)),
        hy(y.size(), 0);
    View hvx(hx.data(), dtype, {2, 3, 5, 5}), hvw(hw.data(), dtype, {4, 3, 3, 3}),
        hvb(hb.data(), dtype, {4}), hvy(hy.data(), dtype, {2, 4, 3, 3});
    EXPECT_EQ(op_supports("kiln.conv2d", {&hvx, &hvw, &hvb}, {&hvy}), 1);
    ASSERT_TRUE(run_op("kiln.conv2d", {&hvx, &hvw, &hvb}, {&hvy},
                       {ints_attr("stride", one), ints_attr("padding", zero),
                        ints_attr("dilation", one), int_attr("groups", 1)})
                    .ok());
    for (uint16_t v : hy) ASSERT_EQ(v, half(13.75f)) << dtype;
  }
  // Half operands beside float32 ones are widened alone: the float32 kernel sees one
  // dtype (the frontend never sends this mix, but a kernel given it computes it right).
  View mixed_w = view_of(w, KILN_DTYPE_FLOAT32, {4, 3, 3, 3});
  View fvb = view_of(b, KILN_DTYPE_FLOAT32, {4});
  std::vector<uint16_t> hx(x.size(), sdk::float16(1.0f).bits), hy(y.size(), 0);
  View hvx(hx.data(), KILN_DTYPE_FLOAT16, {2, 3, 5, 5}),
      hvy(hy.data(), KILN_DTYPE_FLOAT16, {2, 4, 3, 3});
  ASSERT_TRUE(run_op("kiln.conv2d", {&hvx, &mixed_w, &fvb}, {&hvy},
                     {ints_attr("stride", one), ints_attr("padding", zero),
                      ints_attr("dilation", one), int_attr("groups", 1)})
                  .ok());
  for (uint16_t v : hy) ASSERT_EQ(v, sdk::float16(13.75f).bits);
}

// ---- pooling ----------------------------------------------------------------------

TEST(TrainingKernels, MaxPoolIndicesTiesNaNAndBackward) {
  std::vector<float> x = {1,   3, 2,  0,   //
                          3,   0, 5,  5,   //
                          NAN, 1, -1, -2,  //
                          2,   9, -3, -4};
  std::vector<float> y(4);
  std::vector<int64_t> idx(4);
  View vx = view_of(x, KILN_DTYPE_FLOAT32, {1, 1, 4, 4}),
       vy = view_of(y, KILN_DTYPE_FLOAT32, {1, 1, 2, 2});
  View vi = view_of(idx, KILN_DTYPE_INT64, {1, 1, 2, 2});
  const int64_t two[2] = {2, 2}, zero[2] = {0, 0}, one[2] = {1, 1};
  const std::initializer_list<kiln_attr> attrs = {
      ints_attr("kernel_size", two), ints_attr("stride", two), ints_attr("padding", zero),
      ints_attr("dilation", one), int_attr("ceil_mode", 0)};
  ASSERT_TRUE(run_op("kiln.max_pool2d", {&vx}, {&vy, &vi}, attrs).ok());
  EXPECT_EQ(idx, (std::vector<int64_t>{1, 6, 8, 10}));  // first 3 wins the tie; NaN wins
  EXPECT_EQ(y[0], 3);
  EXPECT_EQ(y[1], 5);
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_EQ(y[3], -1);
  std::vector<float> g = {1, 2, 3, 4}, gx(16, -1);
  View vg = view_of(g, KILN_DTYPE_FLOAT32, {1, 1, 2, 2}),
       vgx = view_of(gx, KILN_DTYPE_FLOAT32, {1, 1, 4, 4});
  ASSERT_TRUE(run_op("kiln.max_pool2d_backward", {&vg, &vi}, {&vgx}, attrs).ok());
  std::vector<float> expected(16, 0);
  expected[1] = 1;
  expected[6] = 2;
  expected[8] = 3;
  expected[10] = 4;
  EXPECT_EQ(gx, expected);
}

std::vector<double> run_pool(const char* name, const std::vector<double>& x,
                             std::vector<int64_t> in_shape, std::vector<int64_t> out_shape,
                             std::initializer_list<kiln_attr> attrs) {
  std::vector<double> input = x;
  std::vector<double> out(static_cast<size_t>(
      std::accumulate(out_shape.begin(), out_shape.end(), int64_t{1}, std::multiplies<>())));
  View vi = view_of(input, KILN_DTYPE_FLOAT64, std::move(in_shape)),
       vo = view_of(out, KILN_DTYPE_FLOAT64, std::move(out_shape));
  const Outcome o = run_op(name, {&vi}, {&vo}, attrs);
  EXPECT_TRUE(o.ok()) << name << ": " << o.message;
  return out;
}

TEST(TrainingKernels, AvgPoolDivisorsAndAdjoint) {
  // 5x5 plane, kernel 3, stride 2, padding 1: border windows overlap the padding.
  std::vector<double> x = values(2 * 25, 5);
  const int64_t k[2] = {3, 3}, s[2] = {2, 2}, p[2] = {1, 1};
  for (int include : {0, 1}) {
    const std::initializer_list<kiln_attr> attrs = {
        ints_attr("kernel_size", k), ints_attr("stride", s), ints_attr("padding", p),
        int_attr("ceil_mode", 0), int_attr("count_include_pad", include)};
    const std::vector<double> y = run_pool("kiln.avg_pool2d", x, {1, 2, 5, 5}, {1, 2, 3, 3}, attrs);
    // Top-left window covers x[0..1][0..1]: 4 real elements of 9.
    const double corner = x[0] + x[1] + x[5] + x[6];
    EXPECT_NEAR(y[0], corner / (include ? 9.0 : 4.0), 1e-15) << include;
    const double center = x[6] + x[7] + x[8] + x[11] + x[12] + x[13] + x[16] + x[17] + x[18];
    EXPECT_NEAR(y[4], center / 9.0, 1e-15);
    const std::vector<double> g = values(y.size(), 6);
    const std::vector<double> gx =
        run_pool("kiln.avg_pool2d_backward", g, {1, 2, 3, 3}, {1, 2, 5, 5}, attrs);
    EXPECT_NEAR(dot(y, g), dot(x, gx), 1e-12) << include;
  }
}

TEST(TrainingKernels, AdaptiveAvgPoolWindowsAndAdjoint) {
  std::vector<double> x = values(5 * 7, 7);
  const std::vector<double> y =
      run_pool("kiln.adaptive_avg_pool2d", x, {1, 1, 5, 7}, {1, 1, 3, 2}, {});
  // Row windows of 5 -> 3: [0,2), [1,4), [3,5); column windows of 7 -> 2: [0,4), [3,7).
  double first = 0;
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 4; ++c) first += x[static_cast<size_t>(r * 7 + c)];
  EXPECT_NEAR(y[0], first / 8, 1e-15);
  double last = 0;
  for (int r = 3; r < 5; ++r)
    for (int c = 3; c < 7; ++c) last += x[static_cast<size_t>(r * 7 + c)];
  EXPECT_NEAR(y[5], last / 8, 1e-15);
  const std::vector<double> g = values(y.size(), 8);
  const std::vector<double> gx =
      run_pool("kiln.adaptive_avg_pool2d_backward", g, {1, 1, 3, 2}, {1, 1, 5, 7}, {});
  EXPECT_NEAR(dot(y, g), dot(x, gx), 1e-12);
}

// ---- finite differences ----------------------------------------------------------

// Checks analytic[i] == d/dx_i sum(g * f(x)) by central differences.
void expect_matches_finite_differences(
    const std::function<std::vector<double>(const std::vector<double>&)>& f,
    const std::vector<double>& x, const std::vector<double>& g, const std::vector<double>& analytic,
    double tolerance) {
  const double h = 1e-6;
  for (size_t i = 0; i < x.size(); ++i) {
    std::vector<double> plus = x, minus = x;
    plus[i] += h;
    minus[i] -= h;
    const double numeric = (dot(f(plus), g) - dot(f(minus), g)) / (2 * h);
    ASSERT_NEAR(analytic[i], numeric, tolerance * std::max(1.0, std::fabs(numeric)))
        << "element " << i;
  }
}

TEST(TrainingKernels, BatchNormForwardStatisticsAndBackward) {
  const int64_t n = 3, c = 2, s = 4;
  std::vector<double> x = values(static_cast<size_t>(n * c * s), 9), w = {1.5, -0.5},
                      b = {0.1, 0.2};
  auto forward = [&](const std::vector<double>& input, std::vector<double>* mean_out,
                     std::vector<double>* invstd_out, std::vector<double>* rm_out,
                     std::vector<double>* rv_out) {
    std::vector<double> in = input, y(in.size()), mean(2), invstd(2), rm = {0.5, -0.5},
                        rv = {2.0, 3.0};
    View vx = view_of(in, KILN_DTYPE_FLOAT64, {n, c, s}), vw = view_of(w, KILN_DTYPE_FLOAT64, {c});
    View vb = view_of(b, KILN_DTYPE_FLOAT64, {c}), vy = view_of(y, KILN_DTYPE_FLOAT64, {n, c, s});
    View vm = view_of(mean, KILN_DTYPE_FLOAT64, {c}), vi = view_of(invstd, KILN_DTYPE_FLOAT64, {c});
    View vrm = view_of(rm, KILN_DTYPE_FLOAT64, {c}), vrv = view_of(rv, KILN_DTYPE_FLOAT64, {c});
    const Outcome o = run_op("kiln.batch_norm", {&vx, &vw, &vb}, {&vy, &vm, &vi, &vrm, &vrv},
                             {float_attr("momentum", 0.1), float_attr("eps", 1e-5)});
    EXPECT_TRUE(o.ok()) << o.message;
    if (mean_out) *mean_out = mean;
    if (invstd_out) *invstd_out = invstd;
    if (rm_out) *rm_out = rm;
    if (rv_out) *rv_out = rv;
    return y;
  };
  std::vector<double> mean, invstd, rm, rv;
  const std::vector<double> y = forward(x, &mean, &invstd, &rm, &rv);
  for (int64_t ch = 0; ch < c; ++ch) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < s; ++j) m += x[static_cast<size_t>((i * c + ch) * s + j)];
    m /= n * s;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < s; ++j)
        v += std::pow(x[static_cast<size_t>((i * c + ch) * s + j)] - m, 2);
    const double biased = v / (n * s), unbiased = v / (n * s - 1);
    EXPECT_NEAR(mean[static_cast<size_t>(ch)], m, 1e-15);
    EXPECT_NEAR(invstd[static_cast<size_t>(ch)], 1 / std::sqrt(biased + 1e-5), 1e-12);
    EXPECT_NEAR(rm[static_cast<size_t>(ch)], 0.9 * (ch == 0 ? 0.5 : -0.5) + 0.1 * m, 1e-15);
    EXPECT_NEAR(rv[static_cast<size_t>(ch)], 0.9 * (ch == 0 ? 2.0 : 3.0) + 0.1 * unbiased, 1e-15);
    const size_t first = static_cast<size_t>(ch * s);
    EXPECT_NEAR(y[first],
                (x[first] - m) / std::sqrt(biased + 1e-5) * w[static_cast<size_t>(ch)] +
                    b[static_cast<size_t>(ch)],
                1e-12);
  }
  std::vector<double> g = values(x.size(), 10), gx(x.size()), gw(2), gb(2);
  View vg = view_of(g, KILN_DTYPE_FLOAT64, {n, c, s}),
       vx = view_of(x, KILN_DTYPE_FLOAT64, {n, c, s});
  View vw = view_of(w, KILN_DTYPE_FLOAT64, {c}), vm = view_of(mean, KILN_DTYPE_FLOAT64, {c});
  View vi = view_of(invstd, KILN_DTYPE_FLOAT64, {c}),
       vgx = view_of(gx, KILN_DTYPE_FLOAT64, {n, c, s});
  View vgw = view_of(gw, KILN_DTYPE_FLOAT64, {c}), vgb = view_of(gb, KILN_DTYPE_FLOAT64, {c});
  ASSERT_TRUE(
      run_op("kiln.batch_norm_backward", {&vg, &vx, &vw, &vm, &vi}, {&vgx, &vgw, &vgb}).ok());
  expect_matches_finite_differences(
      [&](const std::vector<double>& in) {
        return forward(in, nullptr, nullptr, nullptr, nullptr);
      },
      x, g, gx, 1e-6);
  for (int64_t ch = 0; ch < c; ++ch) {
    double sum_g = 0, sum_gxhat = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < s; ++j) {
        const size_t k = static_cast<size_t>((i * c + ch) * s + j);
        sum_g += g[k];
        sum_gxhat +=
            g[k] * (x[k] - mean[static_cast<size_t>(ch)]) * invstd[static_cast<size_t>(ch)];
      }
    EXPECT_NEAR(gb[static_cast<size_t>(ch)], sum_g, 1e-12);
    EXPECT_NEAR(gw[static_cast<size_t>(ch)], sum_gxhat, 1e-12);
  }
}

TEST(TrainingKernels, LayerNormForwardAndBackward) {
  const int64_t m = 3, d0 = 2, d1 = 5;
  std::vector<double> x = values(static_cast<size_t>(m * d0 * d1), 11);
  std::vector<double> w = values(static_cast<size_t>(d0 * d1), 12),
                      b = values(static_cast<size_t>(d0 * d1), 13);
  std::vector<double> mean(3), invstd(3);
  auto forward = [&](const std::vector<double>& input) {
    std::vector<double> in = input, y(in.size());
    View vx = view_of(in, KILN_DTYPE_FLOAT64, {m, d0, d1}),
         vw = view_of(w, KILN_DTYPE_FLOAT64, {d0, d1});
    View vb = view_of(b, KILN_DTYPE_FLOAT64, {d0, d1}),
         vy = view_of(y, KILN_DTYPE_FLOAT64, {m, d0, d1});
    View vm = view_of(mean, KILN_DTYPE_FLOAT64, {m}), vi = view_of(invstd, KILN_DTYPE_FLOAT64, {m});
    const Outcome o = run_op("kiln.layer_norm", {&vx, &vw, &vb}, {&vy, &vm, &vi},
                             {int_attr("normalized_ndim", 2), float_attr("eps", 1e-5)});
    EXPECT_TRUE(o.ok()) << o.message;
    return y;
  };
  const std::vector<double> y = forward(x);
  for (int64_t r = 0; r < m; ++r) {
    double mu = 0, var = 0;
    for (int64_t i = 0; i < d0 * d1; ++i) mu += x[static_cast<size_t>(r * d0 * d1 + i)];
    mu /= d0 * d1;
    for (int64_t i = 0; i < d0 * d1; ++i)
      var += std::pow(x[static_cast<size_t>(r * d0 * d1 + i)] - mu, 2);
    var /= d0 * d1;
    EXPECT_NEAR(mean[static_cast<size_t>(r)], mu, 1e-15);
    EXPECT_NEAR(invstd[static_cast<size_t>(r)], 1 / std::sqrt(var + 1e-5), 1e-12);
    const size_t k = static_cast<size_t>(r * d0 * d1 + 3);
    EXPECT_NEAR(y[k], (x[k] - mu) / std::sqrt(var + 1e-5) * w[3] + b[3], 1e-12);
  }
  std::vector<double> g = values(x.size(), 14), gx(x.size()), gw(w.size()), gb(b.size());
  View vg = view_of(g, KILN_DTYPE_FLOAT64, {m, d0, d1}),
       vx = view_of(x, KILN_DTYPE_FLOAT64, {m, d0, d1});
  View vw = view_of(w, KILN_DTYPE_FLOAT64, {d0, d1}), vm = view_of(mean, KILN_DTYPE_FLOAT64, {m});
  View vi = view_of(invstd, KILN_DTYPE_FLOAT64, {m}),
       vgx = view_of(gx, KILN_DTYPE_FLOAT64, {m, d0, d1});
  View vgw = view_of(gw, KILN_DTYPE_FLOAT64, {d0, d1}),
       vgb = view_of(gb, KILN_DTYPE_FLOAT64, {d0, d1});
  ASSERT_TRUE(run_op("kiln.layer_norm_backward", {&vg, &vx, &vw, &vm, &vi}, {&vgx, &vgw, &vgb},
                     {int_attr("normalized_ndim", 2)})
                  .ok());
  const std::vector<double> mean_at_x = mean, invstd_at_x = invstd;
  expect_matches_finite_differences(forward, x, g, gx, 1e-6);
  for (int64_t i = 0; i < d0 * d1; ++i) {
    double sum_g = 0, sum_gxhat = 0;
    for (int64_t r = 0; r < m; ++r) {
      const size_t k = static_cast<size_t>(r * d0 * d1 + i);
      sum_g += g[k];
      sum_gxhat +=
          g[k] * (x[k] - mean_at_x[static_cast<size_t>(r)]) * invstd_at_x[static_cast<size_t>(r)];
    }
    EXPECT_NEAR(gb[static_cast<size_t>(i)], sum_g, 1e-12);
    EXPECT_NEAR(gw[static_cast<size_t>(i)], sum_gxhat, 1e-12);
  }
}

TEST(TrainingKernels, SoftmaxAndLogSoftmaxAlongAnInnerDim) {
  const std::vector<int64_t> shape = {3, 5, 4};  // dim 1: lines of 5 at stride 4
  std::vector<double> x = values(60, 15);
  for (bool log : {false, true}) {
    const char* name = log ? "kiln.log_softmax" : "kiln.softmax";
    auto forward = [&](const std::vector<double>& input) {
      std::vector<double> in = input, y(in.size());
      View vx = view_of(in, KILN_DTYPE_FLOAT64, shape), vy = view_of(y, KILN_DTYPE_FLOAT64, shape);
      EXPECT_TRUE(run_op(name, {&vx}, {&vy}, {int_attr("dim", 1)}).ok());
      return y;
    };
    const std::vector<double> y = forward(x);
    for (int64_t o = 0; o < 3; ++o)
      for (int64_t i = 0; i < 4; ++i) {
        double denom = 0;
        for (int64_t d = 0; d < 5; ++d)
          denom += std::exp(x[static_cast<size_t>((o * 5 + d) * 4 + i)]);
        for (int64_t d = 0; d < 5; ++d) {
          const size_t k = static_cast<size_t>((o * 5 + d) * 4 + i);
          const double expected = log ? x[k] - std::log(denom) : std::exp(x[k]) / denom;
          ASSERT_NEAR(y[k], expected, 1e-14) << name;
        }
      }
    std::vector<double> g = values(60, 16), gx(60), out = y;
    View vg = view_of(g, KILN_DTYPE_FLOAT64, shape), vy = view_of(out, KILN_DTYPE_FLOAT64, shape);
    View vgx = view_of(gx, KILN_DTYPE_FLOAT64, shape);
    ASSERT_TRUE(run_op(log ? "kiln.log_softmax_backward" : "kiln.softmax_backward", {&vg, &vy},
                       {&vgx}, {int_attr("dim", 1)})
                    .ok());
    expect_matches_finite_differences(forward, x, g, gx, 1e-6);
  }
  // Large logits stay finite (the max is subtracted), in float32.
  std::vector<float> big = {1000, 1001, 1002}, p(3);
  View vbig = view_of(big, KILN_DTYPE_FLOAT32, {3}), vp = view_of(p, KILN_DTYPE_FLOAT32, {3});
  ASSERT_TRUE(run_op("kiln.softmax", {&vbig}, {&vp}, {int_attr("dim", 0)}).ok());
  EXPECT_NEAR(p[0] + p[1] + p[2], 1.0f, 1e-6);
  EXPECT_NEAR(p[2], 0.66524096f, 1e-6);
}

TEST(TrainingKernels, GeluBackwardMatchesFiniteDifferences) {
  std::vector<double> x = values(40, 17);
  for (double& v : x) v *= 4;
  for (const char* form : {"none", "tanh"}) {
    auto forward = [&](const std::vector<double>& input) {
      std::vector<double> in = input, y(in.size());
      View vx = view_of(in, KILN_DTYPE_FLOAT64, {40}), vy = view_of(y, KILN_DTYPE_FLOAT64, {40});
      EXPECT_TRUE(run_op("kiln.gelu", {&vx}, {&vy}, {string_attr("approximate", form)}).ok());
      return y;
    };
    std::vector<double> g = values(40, 18), gx(40);
    // grad_y read through a strided view (every other element of a longer buffer).
    std::vector<double> g_spread(80);
    for (size_t i = 0; i < 40; ++i) g_spread[2 * i] = g[i];
    View vg = view_of(g_spread, KILN_DTYPE_FLOAT64, {40}, {2}),
         vx = view_of(x, KILN_DTYPE_FLOAT64, {40});
    View vgx = view_of(gx, KILN_DTYPE_FLOAT64, {40});
    ASSERT_TRUE(
        run_op("kiln.gelu_backward", {&vg, &vx}, {&vgx}, {string_attr("approximate", form)}).ok());
    expect_matches_finite_differences(forward, x, g, gx, 1e-7);
  }
}

// ---- dropout, losses, scatter ----------------------------------------------------

TEST(TrainingKernels, DropoutFollowsThePhiloxRule) {
  const int64_t n = 10001;
  std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
  std::vector<uint8_t> mask(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i % 13) - 6.0f;
  View vx = view_of(x, KILN_DTYPE_FLOAT32, {n}), vy = view_of(y, KILN_DTYPE_FLOAT32, {n});
  View vm = view_of(mask, KILN_DTYPE_UINT8, {n});
  const double p = 0.3;
  ASSERT_TRUE(run_op("kiln.dropout", {&vx}, {&vy, &vm},
                     {float_attr("p", p), int_attr("seed", 5), int_attr("offset", 9)})
                  .ok());
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    const size_t k = static_cast<size_t>(i);
    const bool keep = sdk::random_uniform_f32(5, 9, static_cast<uint64_t>(i), 0.0f, 1.0f) >= p;
    ASSERT_EQ(mask[k], keep ? 1 : 0) << i;
    ASSERT_EQ(y[k], keep ? static_cast<float>(static_cast<double>(x[k]) / (1 - p)) : 0.0f) << i;
    kept += keep;
  }
  EXPECT_NEAR(static_cast<double>(kept) / n, 0.7, 0.02);
}

TEST(TrainingKernels, NllLossAndBackward) {
  std::vector<float> logp = {-1, -2, -3, -0.5f, -1.5f, -2.5f, -0.1f, -0.2f, -0.3f};
  std::vector<int64_t> target = {2, -100, 0};
  std::vector<float> loss(3);
  View vl = view_of(logp, KILN_DTYPE_FLOAT32, {3, 3}), vt = view_of(target, KILN_DTYPE_INT64, {3});
  View vloss = view_of(loss, KILN_DTYPE_FLOAT32, {3});
  ASSERT_TRUE(run_op("kiln.nll_loss", {&vl, &vt}, {&vloss}, {int_attr("ignore_index", -100)}).ok());
  EXPECT_EQ(loss, (std::vector<float>{3, 0, 0.1f}));
  std::vector<float> g = {1, 2, 0.5f}, gl(9, 7);
  View vg = view_of(g, KILN_DTYPE_FLOAT32, {3}), vgl = view_of(gl, KILN_DTYPE_FLOAT32, {3, 3});
  ASSERT_TRUE(
      run_op("kiln.nll_loss_backward", {&vg, &vt}, {&vgl}, {int_attr("ignore_index", -100)}).ok());
  EXPECT_EQ(gl, (std::vector<float>{0, 0, -1, 0, 0, 0, -0.5f, 0, 0}));
  target[1] = 3;
  const Outcome o = run_op("kiln.nll_loss", {&vl, &vt}, {&vloss}, {int_attr("ignore_index", -100)});
  EXPECT_EQ(o.code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(o.message.find("target 3"), std::string::npos) << o.message;
}

TEST(TrainingKernels, IndexAddAccumulatesRepeatedIndicesDeterministically) {
  // The embedding gradient: y [5, 3] += source rows at index.
  std::vector<int64_t> index = {4, 0, 4, 4, 1};
  std::vector<double> source = values(15, 19), y(15, 1.0);
  View vi = view_of(index, KILN_DTYPE_INT64, {5}), vs = view_of(source, KILN_DTYPE_FLOAT64, {5, 3});
  View vy = view_of(y, KILN_DTYPE_FLOAT64, {5, 3});
  ASSERT_TRUE(run_op("kiln.index_add", {&vi, &vs}, {&vy}, {int_attr("dim", 0)}).ok());
  std::vector<double> expected(15, 1.0);
  for (size_t i = 0; i < 5; ++i)
    for (size_t j = 0; j < 3; ++j)
      expected[static_cast<size_t>(index[i]) * 3 + j] += source[i * 3 + j];
  EXPECT_EQ(y, expected) << "same order of additions as a sequential loop";
  // Along dim 1 of [2, 4] with a [2, 3] source.
  std::vector<int64_t> cols = {3, 3, 0};
  std::vector<float> src = {1, 2, 3, 4, 5, 6}, out(8, 0);
  View vc = view_of(cols, KILN_DTYPE_INT64, {3}), vsrc = view_of(src, KILN_DTYPE_FLOAT32, {2, 3});
  View vout = view_of(out, KILN_DTYPE_FLOAT32, {2, 4});
  ASSERT_TRUE(run_op("kiln.index_add", {&vc, &vsrc}, {&vout}, {int_attr("dim", 1)}).ok());
  EXPECT_EQ(out, (std::vector<float>{3, 0, 0, 3, 6, 0, 0, 9}));
  cols[0] = 4;
  EXPECT_EQ(run_op("kiln.index_add", {&vc, &vsrc}, {&vout}, {int_attr("dim", 1)}).code,
            KILN_STATUS_INVALID_ARGUMENT);
}

TEST(TrainingKernels, ScatterAddIsGathersAdjoint) {
  // y[i][index[i][j]] += source[i][j] along dim 1, then the same along dim 0.
  std::vector<int64_t> index = {1, 1, 0, 2, 2, 2};  // [2, 3]
  std::vector<double> source = {1, 2, 3, 4, 5, 6}, y(2 * 4, 0);
  View vi = view_of(index, KILN_DTYPE_INT64, {2, 3}),
       vs = view_of(source, KILN_DTYPE_FLOAT64, {2, 3});
  View vy = view_of(y, KILN_DTYPE_FLOAT64, {2, 4});
  ASSERT_TRUE(run_op("kiln.scatter_add", {&vi, &vs}, {&vy}, {int_attr("dim", 1)}).ok());
  EXPECT_EQ(y, (std::vector<double>{3, 3, 0, 0, 0, 0, 15, 0}));
  std::vector<int64_t> rows = {2, 0, 2, 2, 1, 0};  // [2, 3] into y0 [3, 3]
  std::vector<double> y0(9, 0);
  View vr = view_of(rows, KILN_DTYPE_INT64, {2, 3}), vy0 = view_of(y0, KILN_DTYPE_FLOAT64, {3, 3});
  ASSERT_TRUE(run_op("kiln.scatter_add", {&vr, &vs}, {&vy0}, {int_attr("dim", 0)}).ok());
  EXPECT_EQ(y0, (std::vector<double>{0, 2, 6, 0, 5, 0, 5, 0, 3}));
  // Adjoint of gather: <gather(x), s> == <x, scatter_add(s)>.
  std::vector<double> x = values(9, 20), gathered(6);
  View vx = view_of(x, KILN_DTYPE_FLOAT64, {3, 3}),
       vgat = view_of(gathered, KILN_DTYPE_FLOAT64, {2, 3});
  ASSERT_TRUE(run_op("kiln.gather", {&vx, &vr}, {&vgat}, {int_attr("dim", 0)}).ok());
  EXPECT_NEAR(dot(gathered, source), dot(x, y0), 1e-14);
}

// ---- optimizers ------------------------------------------------------------------

// SGD's and Adam's formulas, step by step, are known-answer cases of the op suites
// (sdk/conformance), run on every device; these keep the ABI's side: the momentum
// buffer operand, strided parameters.
TEST(TrainingKernels, SgdWithoutMomentumLeavesTheBufferAlone) {
  std::vector<double> param = {1, 2}, buf = {7, 7}, grad = {0.5, -0.5};
  View vp = view_of(param, KILN_DTYPE_FLOAT64, {2}), vb = view_of(buf, KILN_DTYPE_FLOAT64, {2});
  View vg = view_of(grad, KILN_DTYPE_FLOAT64, {2});
  ASSERT_TRUE(
      run_op("kiln.sgd_step", {&vg}, {&vp, &vb},
             {float_attr("lr", 0.5), float_attr("momentum", 0), float_attr("dampening", 0),
              float_attr("weight_decay", 0), int_attr("nesterov", 0), int_attr("first_step", 1)})
          .ok());
  EXPECT_EQ(param, (std::vector<double>{0.75, 2.25}));
  EXPECT_EQ(buf, (std::vector<double>{7, 7}));
}

TEST(TrainingKernels, AdamAndAdamWStepsMatchAReference) {
  for (int decoupled : {0, 1}) {
    std::vector<double> param = {1.0, -2.0, 0.5, 3.0}, m(4, 0), v(4, 0),
                        grad = {0.1, -0.2, 0.3, 0.0};
    // A strided parameter: every other element of a longer buffer.
    std::vector<double> spread(8, 42);
    for (size_t i = 0; i < 4; ++i) spread[2 * i] = param[i];
    View vp = view_of(spread, KILN_DTYPE_FLOAT64, {4}, {2}),
         vm = view_of(m, KILN_DTYPE_FLOAT64, {4});
    View vv = view_of(v, KILN_DTYPE_FLOAT64, {4}), vg = view_of(grad, KILN_DTYPE_FLOAT64, {4});
    const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.1;
    std::vector<double> rp = param, rm(4, 0), rv(4, 0);
    for (int64_t step = 1; step <= 3; ++step) {
      ASSERT_TRUE(run_op("kiln.adam_step", {&vg}, {&vp, &vm, &vv},
                         {float_attr("lr", lr), float_attr("beta1", b1), float_attr("beta2", b2),
                          float_attr("eps", eps), float_attr("weight_decay", wd),
                          int_attr("decoupled", decoupled), int_attr("step", step)})
                      .ok());
      for (size_t i = 0; i < 4; ++i) {
        double g = grad[i];
        if (decoupled)
          rp[i] *= 1 - lr * wd;
        else
          g += wd * rp[i];
        rm[i] = b1 * rm[i] + (1 - b1) * g;
        rv[i] = b2 * rv[i] + (1 - b2) * g * g;
        const double mhat = rm[i] / (1 - std::pow(b1, step)),
                     vhat = rv[i] / (1 - std::pow(b2, step));
        rp[i] -= lr * mhat / (std::sqrt(vhat) + eps);
      }
    }
    for (size_t i = 0; i < 4; ++i) {
      // The reference regroups the bias corrections, so allow rounding differences.
      EXPECT_NEAR(spread[2 * i], rp[i], 1e-12) << "decoupled " << decoupled << " element " << i;
      EXPECT_EQ(spread[2 * i + 1], 42) << "elements between the strided ones are untouched";
    }
  }
}

}  // namespace
}  // namespace kiln::test
