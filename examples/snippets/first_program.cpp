#include <iostream>

#include <kiln/kiln.h>

int main() {
  auto x = kiln::randn({64, 784});                      // on KILN_BACKEND's device
  auto w = kiln::randn({784, 10}) * 0.01;
  auto logits = kiln::matmul(x, w).relu();
  std::cout << logits.argmax(1) << "\n";                  // host read: waits for the device
  std::cout << kiln::fallback_report().str();            // ops that ran on the CPU instead
}
