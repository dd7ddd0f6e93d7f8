// Tutorial 3: a 1000x1000 matmul timed on every device Kiln loaded, and checked
// against the CPU in double precision.
#include <chrono>
#include <iostream>

#include <kiln/kiln.h>

int main() {
  for (const auto& plugin : kiln::loaded_plugins()) {
    for (const auto& info : plugin.devices) {
      auto a = kiln::randn({1000, 1000}, info.device), b = kiln::randn({1000, 1000}, info.device);
      kiln::matmul(a, b);  // warm-up
      kiln::synchronize(info.device);
      auto start = std::chrono::steady_clock::now();
      auto c = kiln::matmul(a, b);
      kiln::synchronize(info.device);
      std::chrono::duration<double> s = std::chrono::steady_clock::now() - start;
      std::cout << info.device << ": " << s.count() << " s, " << 2 / s.count() << " GFLOP/s\n";
      auto expected = kiln::matmul(a.to("cpu").to(kiln::float64), b.to("cpu").to(kiln::float64));
      if ((c.to("cpu").to(kiln::float64) - expected).abs().max().item<double>() > 1e-3) return 1;
    }
  }
}
