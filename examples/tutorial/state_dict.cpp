// Tutorial 7: save a model's state_dict and load it into a fresh model.
#include <iostream>

#include <kiln/kiln.h>

int main() {
  kiln::manual_seed(0);
  kiln::nn::Linear model(4, 2);
  kiln::io::save_safetensors("model.safetensors", model.state_dict());
  kiln::nn::Linear restored(4, 2);  // different random weights
  restored.load_state_dict(kiln::io::load_safetensors("model.safetensors").tensors);
  auto x = kiln::randn({3, 4});
  double diff = (model(x) - restored(x)).abs().max().item<double>();
  std::cout << "max difference after loading: " << diff << "\n";
  return diff == 0 ? 0 : 1;
}
