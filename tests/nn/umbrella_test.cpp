// <kiln/kiln.h> alone is enough for a PyTorch-style training step: tensors, nn,
// losses, optimizers, data and checkpoints (this file includes nothing else of Kiln's).
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <filesystem>

namespace {

TEST(Umbrella, OneHeaderTrainsAModelCalledLikeAFunction) {
  kiln::manual_seed(0);
  auto model = std::make_shared<kiln::nn::Linear>(3, 1);
  kiln::optim::SGD sgd(model->parameters(), kiln::optim::SGDOptions(0.1));
  auto x = kiln::ones({8, 3});
  auto y = kiln::full({8, 1}, 2.0);
  float first = 0, last = 0;
  for (int step = 0; step < 20; ++step) {
    sgd.zero_grad();
    auto loss = kiln::nn::functional::mse_loss((*model)(x), y);  // model(x)
    loss.backward();
    sgd.step();
    (step == 0 ? first : last) = loss.item<float>();
  }
  EXPECT_LT(last, first * 0.01f);
  EXPECT_EQ((*model)(x).sum().item<float>(), model->forward(x).sum().item<float>());

  kiln::data::TensorDataset data(x, y);
  EXPECT_EQ(data.size(), 8);
  const auto path = std::filesystem::temp_directory_path() / "kiln-umbrella.safetensors";
  kiln::io::save_safetensors(path, model->state_dict());
  EXPECT_EQ(kiln::io::load_safetensors(path).tensors.size(), 2u);
  std::filesystem::remove(path);
}

}  // namespace
