// Tutorial 10: a convolution through the FFT, checked against conv2d; a low-pass filter.
#include <cmath>
#include <iostream>

#include <kiln/kiln.h>

int main() {
  namespace fft = kiln::fft;
  kiln::manual_seed(0);
  auto signal = kiln::randn({4, 1, 1, 1000}), kernel = kiln::randn({1, 1, 1, 31});
  int64_t k = kernel.size(-1), n = signal.size(-1) + k - 1;  // long enough: no wrap-around
  auto spectrum = fft::rfft(signal, n) * fft::rfft(kernel.flip({-1}), n);
  auto via_fft = fft::irfft(spectrum, n).narrow(-1, k - 1, signal.size(-1) - k + 1);
  auto direct = kiln::nn::functional::conv2d(signal, kernel);  // a cross-correlation
  double err = kiln::amax((via_fft - direct).abs()).item<double>();
  auto t = kiln::linspace(0, 1, 1000);
  auto tone = kiln::sin(2 * M_PI * 5 * t);
  auto noisy = tone + 0.3 * kiln::randn({1000});
  auto keep = fft::rfftfreq(1000, 1.0 / 1000) < 20;  // the frequencies below 20 Hz
  auto clean = fft::irfft(fft::rfft(noisy) * keep, 1000);
  double before = (noisy - tone).abs().mean().item<double>();
  double after = (clean - tone).abs().mean().item<double>();
  std::cout << "conv via FFT vs conv2d: " << err << "\nnoise " << before << " -> " << after << "\n";
  return err < 1e-4 && after < before / 3 ? 0 : 1;
}
