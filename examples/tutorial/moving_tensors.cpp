// Tutorial 4: tensors on two devices (the GPU when there is one, else a second CPU
// device: run with KILN_CPU_DEVICES=2), copied between them.
#include <iostream>

#include <kiln/kiln.h>

int main() {
  kiln::Device other = kiln::is_available("cuda") ? kiln::Device("cuda:0") : kiln::Device("cpu:1");
  auto x = kiln::arange(0.0, 6.0, 1.0).reshape({2, 3});  // on cpu:0
  auto y = x.to(other);                                  // a copy on the other device
  auto z = (y * 2).to("cpu:0");                          // computed there, copied back
  std::cout << x.device() << " -> " << y.device() << " -> " << z.device() << "\n" << z << "\n";
  try {
    x + y;  // operands on two devices: an error, as in PyTorch
    return 1;
  } catch (const kiln::Error& e) {
    std::cout << "expected error: " << e.what() << "\n";
  }
  return z.to_vector<float>() == std::vector<float>{0, 2, 4, 6, 8, 10} ? 0 : 1;
}
