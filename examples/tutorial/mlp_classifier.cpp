// Tutorial 2: an MLP classifier for Fashion-MNIST trained with Adam for one epoch.
#include <iostream>

#include <kiln/kiln.h>

using namespace kiln;

int main() {
  manual_seed(0);
  nn::Sequential model({std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(784, 128),
                        std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(128, 10)});
  nn::CrossEntropyLoss criterion;
  optim::Adam optimizer(model.parameters(), optim::AdamOptions(1e-3));
  data::DataLoader train(data::FashionMNIST(),
                         data::DataLoaderOptions().batch_size(64).shuffle(true));
  for (auto& batch : train) {
    optimizer.zero_grad();
    auto loss = criterion(model(batch.input), batch.target);
    loss.backward();
    optimizer.step();
  }
  model.eval();
  NoGradGuard no_grad;
  data::DataLoader test(data::FashionMNIST(data::FashionMNIST::default_root(), false),
                        data::DataLoaderOptions().batch_size(1000));
  int64_t correct = 0, total = 0;
  for (auto& batch : test) {
    correct += (model(batch.input).argmax(1) == batch.target).sum().item<int64_t>();
    total += batch.target.size(0);
  }
  double accuracy = double(correct) / double(total);
  std::cout << "test accuracy: " << accuracy << "\n";
  return accuracy > 0.8 ? 0 : 1;
}
