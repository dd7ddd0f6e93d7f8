// The Fourier transforms' suites: kiln.fft_c2c, kiln.fft_r2c and kiln.fft_c2r, reached
// through kiln::fft. Complex operands are made from real ones of last dim 2
// (view_as_complex) and complex results compared as their real pairs (view_as_real), so
// a float32 operand is a complex64 signal checked against the CPU's complex128 reference.
// Lengths: 1, primes, powers of two and other composites; transposed and batched inputs;
// every norm; gradients compared with the CPU's, gradcheck in float64, and known answers.
#include "op_suite.h"

namespace kiln::conformance {

namespace {

// x's last dim of 2 read as a complex number.
Tensor as_complex(const Tensor& x) { return view_as_complex(x); }

Case transform_case(const std::string& label, Operand x,
                    std::function<Tensor(const Tensor&)> transform, bool complex_input) {
  Case c;
  x.requires_grad = true;
  c.label = label + ": " + describe(x);
  c.inputs = {x};
  c.fn = [transform, complex_input](const Operands& in, const Device&) {
    Tensor y = transform(complex_input ? as_complex(in[0]) : in[0]);
    return Outputs{is_complex(y.dtype()) ? view_as_real(y) : y};
  };
  c.grad = true;
  c.tolerance_scale = 8;  // sums of n terms
  return c;
}

std::vector<Case> c2c_cases() {
  std::vector<Case> cases;
  for (DType d : {DType::Float32, DType::Float64})
    for (int64_t n : {1, 5, 8, 17, 64, 97})
      cases.push_back(transform_case(
          "fft", operand({3, n, 2}, d), [](const Tensor& z) { return fft::fft(z); }, true));
  for (const char* norm : {"backward", "forward", "ortho"}) {
    const std::string nm = norm;
    cases.push_back(transform_case(
        "ifft along dim 0 of a transposed signal, norm " + nm, operand({4, 6, 2}, DType::Float32),
        [nm](const Tensor& z) { return fft::ifft(z.transpose(0, 1), std::nullopt, 0, nm); }, true));
    cases.push_back(transform_case(
        "fft2 with padding and trimming, norm " + nm, operand({2, 5, 6, 2}, DType::Float64),
        [nm](const Tensor& z) {
          return fft::fft2(z, std::vector<int64_t>{7, 4}, {-2, -1}, nm);
        },
        true));
  }
  cases.push_back(transform_case(
      "fft of a real signal (two-sided)", operand({2, 9}, DType::Float32),
      [](const Tensor& x) { return fft::fft(x); }, false));
  Case check = transform_case(
      "fftn gradcheck", operand({3, 4, 2}, DType::Float64),
      [](const Tensor& z) { return fft::fftn(z); }, true);
  check.gradcheck = true;
  cases.push_back(check);
  // fft([1, 2, 3, 4]) = [10, -2+2i, -2, -2-2i].
  cases.push_back(
      known("fft of [1, 2, 3, 4]", {operand_of({4, 2}, DType::Float32, {1, 0, 2, 0, 3, 0, 4, 0})},
            [](const Operands& in) { return Outputs{view_as_real(fft::fft(as_complex(in[0])))}; },
            {{10, 0, -2, 2, -2, 0, -2, -2}}));
  return cases;
}

std::vector<Case> r2c_cases() {
  std::vector<Case> cases;
  for (DType d : {DType::Float32, DType::Float64})
    for (int64_t n : {1, 2, 7, 12, 64, 101})
      cases.push_back(transform_case(
          "rfft", operand({3, n}, d), [](const Tensor& x) { return fft::rfft(x); }, false));
  cases.push_back(transform_case(
      "rfft2 of transposed images", operand({2, 6, 5}, DType::Float32, Layout::Transposed),
      [](const Tensor& x) { return fft::rfft2(x); }, false));
  cases.push_back(transform_case(
      "ihfft, norm ortho", operand({4, 7}, DType::Float64),
      [](const Tensor& x) { return fft::ihfft(x, std::nullopt, -1, "ortho"); }, false));
  Case check = transform_case(
      "rfftn gradcheck", operand({4, 3}, DType::Float64),
      [](const Tensor& x) {
        return fft::rfftn(x, std::nullopt, std::vector<int64_t>{1, 0});
      },
      false);
  check.gradcheck = true;
  cases.push_back(check);
  cases.push_back(known("rfft of [1, 2, 3, 4]", {operand_of({4}, DType::Float32, {1, 2, 3, 4})},
                        [](const Operands& in) { return Outputs{view_as_real(fft::rfft(in[0]))}; },
                        {{10, 0, -2, 2, -2, 0}}));
  return cases;
}

std::vector<Case> c2r_cases() {
  std::vector<Case> cases;
  for (DType d : {DType::Float32, DType::Float64})
    for (int64_t n : {1, 2, 5, 8, 33}) {
      const int64_t half = n / 2 + 1;
      cases.push_back(transform_case(
          "irfft n=" + std::to_string(n), operand({3, half, 2}, d),
          [n](const Tensor& z) { return fft::irfft(z, n); }, true));
    }
  cases.push_back(transform_case(
      "irfft2 of a batch, norm forward", operand({2, 4, 3, 2}, DType::Float32),
      [](const Tensor& z) {
        return fft::irfft2(z, std::vector<int64_t>{4, 5}, {-2, -1}, "forward");
      },
      true));
  cases.push_back(transform_case(
      "hfft along dim 0 of a transposed signal", operand({3, 4, 2}, DType::Float64),
      [](const Tensor& z) { return fft::hfft(z.transpose(0, 1), 6, 1); }, true));
  Case check = transform_case(
      "irfftn gradcheck", operand({3, 3, 2}, DType::Float64),
      [](const Tensor& z) { return fft::irfftn(z); }, true);
  check.gradcheck = true;
  cases.push_back(check);
  // irfft([10, -2+2i, -2]) = [1, 2, 3, 4].
  cases.push_back(known(
      "irfft of [10, -2+2i, -2]", {operand_of({3, 2}, DType::Float32, {10, 0, -2, 2, -2, 0})},
      [](const Operands& in) { return Outputs{fft::irfft(as_complex(in[0]))}; }, {{1, 2, 3, 4}}));
  return cases;
}

}  // namespace

void add_fft_suites(std::vector<OpSuite>& suites) {
  suites.push_back({"kiln.fft_c2c", c2c_cases});
  suites.push_back({"kiln.fft_r2c", r2c_cases});
  suites.push_back({"kiln.fft_c2r", c2r_cases});
}

}  // namespace kiln::conformance
