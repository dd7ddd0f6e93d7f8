// Complex tensors on every device: the views between complex and real pairs, creation,
// conversion, arithmetic with promotion, sum/mean/matmul, printing, the refusals, and
// gradients in PyTorch's convention (gradcheck perturbs real and imaginary parts apart).
// References are std::complex<double> on the host; tolerances: 1e-6 relative for
// complex64 (float32 parts), 1e-12 for complex128.
#include <complex>
#include <sstream>

#include "ops/conformance.h"

namespace kiln::test {
namespace {

using cd = std::complex<double>;

class Complex : public DeviceTest {
 protected:
  // A complex tensor from (re, im) pairs.
  Tensor make_complex(const std::vector<cd>& values, const Shape& shape,
                      DType dtype = complex128) const {
    std::vector<double> pairs;
    for (cd v : values) {
      pairs.push_back(v.real());
      pairs.push_back(v.imag());
    }
    Shape pair_shape = shape;
    pair_shape.push_back(2);
    return view_as_complex(make(pairs, pair_shape, real_dtype(dtype)));
  }
  Tensor random_complex(const Shape& shape, uint32_t seed, DType dtype = complex128) const {
    Shape pair_shape = shape;
    pair_shape.push_back(2);
    return view_as_complex(random(pair_shape, seed, real_dtype(dtype)));
  }
  static std::vector<cd> values_of(const Tensor& t) { return t.to(complex128).to_vector<cd>(); }
  static void expect_near(const std::vector<cd>& got, const std::vector<cd>& want, double tol) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_LE(std::abs(got[i] - want[i]), tol * (1 + std::abs(want[i])))
          << "element " << i << ": " << got[i] << " vs " << want[i];
  }
};

TEST_P(Complex, ViewsShareMemoryBothWays) {
  Tensor z = make_complex({{1, 2}, {3, -4}, {-5, 6}}, {3});
  EXPECT_EQ(z.dtype(), complex128);
  EXPECT_EQ(z.element_size(), 16u);
  Tensor pairs = view_as_real(z);
  EXPECT_EQ(pairs.shape().vec(), (Shape{3, 2}));
  EXPECT_EQ(pairs.dtype(), float64);
  EXPECT_EQ(pairs.to_vector<double>(), (std::vector<double>{1, 2, 3, -4, -5, 6}));
  real(z).fill_(7);  // real() and imag() are views: writing them changes z
  imag(z).narrow(0, 1, 1).fill_(8);
  EXPECT_EQ(values_of(z), (std::vector<cd>{{7, 2}, {7, 8}, {7, 6}}));
  // A transposed complex tensor keeps its pairs' stride 1.
  Tensor m = random_complex({2, 3}, 1).t();
  EXPECT_EQ(view_as_real(m).stride(-1), 1);
  EXPECT_EQ(values_of(view_as_complex(view_as_real(m))), values_of(m));
  EXPECT_EQ(values_of(m.contiguous()), values_of(m));
}

TEST_P(Complex, ViewAsComplexRefusesWhatCannotBePairs) {
  EXPECT_KILN_ERROR(view_as_complex(random({3, 3}, 2)), "size 2");
  EXPECT_KILN_ERROR(view_as_complex(random({2, 3}, 3).t()), "stride 1");
  // Rows of 3 pairs... of 5 floats: the pairs of row 1 would start at an odd offset.
  EXPECT_KILN_ERROR(view_as_complex(random({2, 5}, 4).narrow(1, 1, 2)), "even");
  EXPECT_KILN_ERROR(view_as_complex(random({4, 2}, 5, int32)), "float32 or float64");
  EXPECT_KILN_ERROR(view_as_real(random({2}, 6)), "complex");
  EXPECT_KILN_ERROR(imag(random({2}, 7)), "complex");
  EXPECT_KILN_ERROR(complex(random({2}, 8), random({2}, 9, float64)), "one dtype");
}

TEST_P(Complex, CreationConversionAndHostValues) {
  Tensor z = zeros({2, 2}, opts(complex64));
  EXPECT_EQ(values_of(z), std::vector<cd>(4, cd(0, 0)));
  Tensor f = full({3}, 2.5, opts(complex128));
  EXPECT_EQ(values_of(f), std::vector<cd>(3, cd(2.5, 0)));
  // A real tensor converts with zero imaginary parts; complex64 <-> complex128 keeps both.
  Tensor r = make({1, -2, 3}, {3}, int64).to(complex64);
  EXPECT_EQ(r.dtype(), complex64);
  EXPECT_EQ(values_of(r), (std::vector<cd>{{1, 0}, {-2, 0}, {3, 0}}));
  Tensor w = make_complex({{0.5, -1.25}}, {1}, complex64).to(complex128);
  EXPECT_EQ(w.item<cd>(), cd(0.5, -1.25));
  // Dropping the imaginary part is never silent.
  EXPECT_KILN_ERROR(w.to(float64), "imaginary");
  EXPECT_KILN_ERROR(w.item<double>(), "imaginary");
  Tensor v = from_vector<std::complex<float>>({{1, 2}, {3, 4}}, {2}, opts(complex64));
  EXPECT_EQ(v.to_vector<std::complex<float>>(), (std::vector<std::complex<float>>{{1, 2}, {3, 4}}));
  // copy_ into a complex destination, broadcast.
  Tensor dst = zeros({2, 2}, opts(complex128));
  dst.copy_(make_complex({{1, -1}, {2, -2}}, {2}));
  EXPECT_EQ(values_of(dst), (std::vector<cd>{{1, -1}, {2, -2}, {1, -1}, {2, -2}}));
}

TEST_P(Complex, ComplexPolarConjAbsAngle) {
  Tensor re = make({3, 0, -1, 0}, {4}, float64), im = make({4, -2, 0, 0}, {4}, float64);
  Tensor z = complex(re, im);
  EXPECT_EQ(values_of(z), (std::vector<cd>{{3, 4}, {0, -2}, {-1, 0}, {0, 0}}));
  EXPECT_EQ(values_of(conj(z)), (std::vector<cd>{{3, -4}, {0, 2}, {-1, -0.0}, {0, -0.0}}));
  EXPECT_EQ(abs(z).dtype(), float64);
  EXPECT_EQ(abs(z).to_vector<double>(), (std::vector<double>{5, 2, 1, 0}));
  auto a = angle(z).to_vector<double>();
  const std::vector<double> want = {std::atan2(4.0, 3.0), -M_PI / 2, M_PI, 0};
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(a[i], want[i], 1e-15) << i;
  // polar inverts abs and angle.
  expect_near(values_of(polar(abs(z), angle(z))), values_of(z), 1e-15);
  // A real input: conj and real return it, angle is 0 or π.
  Tensor x = make({-2, 3}, {2});
  EXPECT_EQ(conj(x).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(angle(x).to_vector<float>(), (std::vector<float>{static_cast<float>(M_PI), 0}));
  // abs of complex64 computes |z|² in float64: no overflow near float32's max.
  Tensor big = make_complex({{3e30, 4e30}}, {1}, complex64);
  EXPECT_NEAR(abs(big).item<float>(), 5e30f, 5e30f * 1e-6f);
}

TEST_P(Complex, ArithmeticPromotesAndBroadcasts) {
  const std::vector<cd> av = {{1, 2}, {-3, 0.5}, {0.25, -4}}, bv = {{2, -1}, {0.5, 0.5}, {-1, 3}};
  for (DType dtype : {complex64, complex128}) {
    const double tol = dtype == complex64 ? 1e-6 : 1e-12;
    Tensor a = make_complex(av, {3}, dtype), b = make_complex(bv, {3}, dtype);
    std::vector<cd> sum, diff, prod, quot, neg_a;
    for (size_t i = 0; i < 3; ++i) {
      sum.push_back(av[i] + bv[i]);
      diff.push_back(av[i] - bv[i]);
      prod.push_back(av[i] * bv[i]);
      quot.push_back(av[i] / bv[i]);
      neg_a.push_back(-av[i]);
    }
    expect_near(values_of(a + b), sum, tol);
    expect_near(values_of(a - b), diff, tol);
    expect_near(values_of(a * b), prod, tol);
    expect_near(values_of(a / b), quot, tol);
    expect_near(values_of(-a), neg_a, tol);
    EXPECT_EQ((a * b).dtype(), dtype);
  }
  // Real operands and scalars promote: complex64 with float64 gives complex128.
  Tensor a = make_complex(av, {3}, complex64);
  Tensor r = make({2, -1, 0.5}, {3}, float64);
  EXPECT_EQ((a * r).dtype(), complex128);
  expect_near(values_of(a * r), {{2, 4}, {3, -0.5}, {0.125, -2}}, 1e-6);
  expect_near(values_of(r / make_complex(bv, {3})), {2.0 / bv[0], -1.0 / bv[1], 0.5 / bv[2]},
              1e-12);
  expect_near(values_of(a * 2), {{2, 4}, {-6, 1}, {0.5, -8}}, 1e-6);
  expect_near(values_of(1.0 - a), {{0, -2}, {4, -0.5}, {0.75, 4}}, 1e-6);
  EXPECT_EQ((a + make({1}, {1}, int32)).dtype(), complex64);
  // Broadcast: [2, 1] with [3].
  Tensor col = make_complex({{1, 1}, {0, -1}}, {2, 1});
  std::vector<cd> outer;
  for (cd c : std::vector<cd>{{1, 1}, {0, -1}})
    for (cd v : av) outer.push_back(c * v);
  expect_near(values_of(col * make_complex(av, {3})), outer, 1e-12);
  // In place, in the tensor's dtype.
  Tensor acc = make_complex(av, {3});
  acc.add_(make_complex(bv, {3}));
  acc.mul_(2);
  expect_near(values_of(acc), {{6, 2}, {-5, 2}, {-1.5, -2}}, 1e-12);
  Tensor real_acc = make({1, 2, 3}, {3}, float64);
  EXPECT_KILN_ERROR(real_acc.add_(make_complex(bv, {3})), "cannot be stored");
}

TEST_P(Complex, SumMeanMatmul) {
  Tensor z = random_complex({3, 4}, 11);
  auto v = values_of(z);
  std::vector<cd> rows(3), cols(4);
  cd all = 0;
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 4; ++j) {
      rows[i] += v[i * 4 + j];
      cols[j] += v[i * 4 + j];
      all += v[i * 4 + j];
    }
  expect_near(values_of(sum(z, {1})), rows, 1e-12);
  expect_near(values_of(sum(z, {-2}, true)), cols, 1e-12);
  EXPECT_EQ(sum(z, {-2}, true).shape().vec(), (Shape{1, 4}));
  expect_near(values_of(sum(z)), {all}, 1e-12);
  expect_near(values_of(mean(z)), {all / 12.0}, 1e-12);
  // matmul: complex @ complex, complex @ real, real @ complex (transposed operand).
  Tensor w = random_complex({4, 2}, 12);
  Tensor rw = random({2, 4}, 13, float64).t();
  const std::vector<cd> wv = values_of(w);
  const std::vector<double> rwv = rw.to_vector<double>();
  std::vector<cd> zw(6), zr(6);
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 2; ++j)
      for (size_t k = 0; k < 4; ++k) {
        zw[i * 2 + j] += v[i * 4 + k] * wv[k * 2 + j];
        zr[i * 2 + j] += v[i * 4 + k] * rwv[k * 2 + j];
      }
  expect_near(values_of(matmul(z, w)), zw, 1e-12);
  expect_near(values_of(matmul(z, rw)), zr, 1e-12);
  std::vector<cd> rz(4 * 4);
  Tensor rr = random({4, 3}, 14, float64);
  auto rrv = rr.to_vector<double>();
  for (size_t i = 0; i < 4; ++i)
    for (size_t j = 0; j < 4; ++j)
      for (size_t k = 0; k < 3; ++k) rz[i * 4 + j] += rrv[i * 3 + k] * v[k * 4 + j];
  expect_near(values_of(matmul(rr, z)), rz, 1e-12);
}

TEST_P(Complex, OpsWithoutAComplexMeaningRefuseIt) {
  Tensor z = random_complex({3}, 15);
  EXPECT_KILN_ERROR(relu(z), "complex");
  EXPECT_KILN_ERROR(exp(z), "complex");
  EXPECT_KILN_ERROR(maximum(z, z), "complex");
  EXPECT_KILN_ERROR(z < z, "complex");
  EXPECT_KILN_ERROR(z == z, "complex");
  EXPECT_KILN_ERROR(amax(z), "complex");
  EXPECT_KILN_ERROR(z.exp_(), "complex");
  EXPECT_KILN_ERROR(sort(z), "complex");
}

TEST_P(Complex, PrintsAsPyTorchDoes) {
  std::ostringstream a, b;
  a << make_complex({{1, 2}, {3, -4}}, {2}, complex64);
  const std::string on = device() == Device("cpu:0") ? "" : ", device='" + device().str() + "'";
  EXPECT_EQ(a.str(), "tensor([1.+2.j, 3.-4.j]" + on + ")") << a.str();
  b << make_complex({{1.5, -0.25}}, {1});
  EXPECT_EQ(b.str(), "tensor([1.5000-0.2500j]" + on + ", dtype=complex128)") << b.str();
}

TEST_P(Complex, GradientsFollowPyTorchsConvention) {
  // L = Σ re(w·z) for a fixed complex w: dL/d(re z) = re w, dL/d(im z) = -im w, so
  // PyTorch's z.grad = re w - i·im w = conj(w).
  Tensor z = make_complex({{1, 2}, {-1, 0.5}}, {2});
  z.requires_grad_();
  Tensor w = make_complex({{3, -1}, {0.5, 2}}, {2});
  real(w * z).sum().backward();
  EXPECT_EQ(values_of(z.grad()), (std::vector<cd>{{3, 1}, {0.5, -2}}));
  // A real input promoted to complex receives the real part of its gradient.
  Tensor r = make({1, 2}, {2}, float64);
  r.requires_grad_();
  abs(r * w).sum().backward();
  EXPECT_EQ(r.grad().dtype(), float64);
  EXPECT_NEAR(r.grad().to_vector<double>()[0], std::abs(cd(3, -1)), 1e-12);

  auto one = [this](uint32_t seed) {
    Tensor t = random_complex({2, 3}, seed);
    t.requires_grad_();
    return t;
  };
  auto check = [](const char* what, const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                  const std::vector<Tensor>& in) {
    auto result = gradcheck(fn, in);
    EXPECT_TRUE(result.ok) << what << ": " << result.message;
  };
  check("mul", [](const auto& x) { return x[0] * x[1]; }, {one(21), one(22)});
  check("div", [](const auto& x) { return x[0] / (x[1] + 3.0); }, {one(23), one(24)});
  check("abs", [](const auto& x) { return abs(x[0]); }, {one(25)});
  check("angle", [](const auto& x) { return angle(x[0]); }, {one(26)});
  check("sum, mean", [](const auto& x) { return sum(x[0], {1}) * mean(x[0]); }, {one(27)});
  check("matmul", [](const auto& x) { return matmul(x[0], x[1].t()); }, {one(28), one(29)});
  check("conj, real, imag", [](const auto& x) { return real(conj(x[0]) * x[0]) + imag(x[0]); },
        {one(30)});
  Tensor re = random({4}, 31, float64), im = random({4}, 32, float64);
  re.requires_grad_();
  im.requires_grad_();
  check("complex, polar", [](const auto& x) { return complex(x[0], x[1]) * polar(x[0], x[1]); },
        {re, im});
}

KILN_INSTANTIATE_FOR_EVERY_DEVICE(Complex);

}  // namespace
}  // namespace kiln::test
