// Tutorial 1: fit y = 3x + 2 + noise with nn::Linear, MSELoss and SGD.
#include <cmath>
#include <iostream>

#include <kiln/kiln.h>

int main() {
  kiln::manual_seed(0);
  auto x = kiln::randn({200, 1});
  auto y = 3.0 * x + 2.0 + 0.1 * kiln::randn({200, 1});
  kiln::nn::Linear model(1, 1);
  kiln::nn::MSELoss criterion;
  kiln::optim::SGD optimizer(model.parameters(), kiln::optim::SGDOptions(0.1));
  for (int epoch = 0; epoch < 200; ++epoch) {
    optimizer.zero_grad();
    auto loss = criterion(model(x), y);
    loss.backward();
    optimizer.step();
  }
  float w = model.weight.item<float>(), b = model.bias.item<float>();
  std::cout << "w = " << w << ", b = " << b << "\n";
  return std::abs(w - 3) < 0.05 && std::abs(b - 2) < 0.05 ? 0 : 1;
}
