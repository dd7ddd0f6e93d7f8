// A first Kiln program: tensors on the default device (KILN_BACKEND), a few ops,
// a least-squares fit by gradient steps written out by hand, and the fallback
// report. Run it on another backend with KILN_BACKEND=<name>; nothing is rebuilt.

#include <iostream>

#include <kiln/kiln.h>

int main() {
  try {
    kiln::manual_seed(0);
    kiln::Device device = kiln::default_device();
    std::cout << "Running on " << device << "\n\n";

    auto a = kiln::arange(0.0, 6.0, 1.0).reshape({2, 3});
    std::cout << "a = " << a << "\n";
    std::cout << "a.t() @ a = " << kiln::matmul(a.t(), a) << "\n";
    std::cout << "a.sum(1) = " << a.sum({1}) << ", a.max() = " << a.max().item<float>() << "\n\n";

    // Fit y = X w + noise for w by plain gradient descent.
    const int64_t n = 256, d = 4;
    auto x = kiln::randn({n, d});
    auto true_w = kiln::from_vector<float>({1.5f, -2.0f, 0.5f, 3.0f}, {d, 1});
    auto y = kiln::matmul(x, true_w) + 0.01 * kiln::randn({n, 1});
    auto w = kiln::zeros({d, 1});
    for (int step = 0; step < 200; ++step) {
      auto residual = kiln::matmul(x, w) - y;
      auto grad = kiln::matmul(x.t(), residual) * (2.0 / n);
      w.sub_(grad * 0.1);
    }
    auto loss = (kiln::matmul(x, w) - y).pow(2).mean().item<float>();
    std::cout << "fitted w = " << w.reshape({-1}) << "\n";
    std::cout << "true   w = " << true_w.reshape({-1}) << "\n";
    std::cout << "mean squared error = " << loss << "\n\n";
    std::cout << kiln::fallback_report().str();
    return 0;
  } catch (const kiln::Error& e) {
    std::cerr << "kiln-demo: " << e.what() << "\n";
    return 1;
  }
}
